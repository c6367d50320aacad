"""Which adapter a store URL opens; that no opening creates a store, and what each refuses."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from config import ServiceConfiguration, parse_store_url
from core.errors import ConfigurationError, LayoutError, TransientMetadataError
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.opening import (
    StoreSpec,
    make_embedded_store,
    open_embedded_ledgers,
    open_ledger_storage,
    open_metadata_store,
    open_store,
)
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.adapters.stores.zookeeper import DIGEST_ENV
from ledger_janitor.demo.embedded import free_port


def sqlite(path: Path) -> StoreSpec:
    return StoreSpec(parse_store_url(f"sqlite:{path}"))


def test_only_make_embedded_store_makes_a_store_and_the_openings_read_it(tmp_path: Path) -> None:
    spec = sqlite(tmp_path / "new" / "janitor.db")
    make_embedded_store(tmp_path / "new" / "janitor.db")  # the directory too
    metadata = open_metadata_store(spec)
    ledgers = open_ledger_storage(spec)
    try:
        assert isinstance(metadata, SqliteMetadataStore)
        assert isinstance(ledgers, SqliteLedgerStorage)
        # laid out as a cluster's: the roots the openings require
        assert metadata.get("/admin") is not None and metadata.get("/managed-ledgers") is not None
        metadata.create("/a", b"x")
        ledger_id = ledgers.create_ledger({"k": b"v"})
    finally:
        ledgers.close()
        metadata.close()
    make_embedded_store(tmp_path / "new" / "janitor.db")  # an existing one is left as it is
    reopened = open_metadata_store(spec)
    entries = open_embedded_ledgers(spec)
    try:
        node = reopened.get("/a")
        assert node is not None and node.data == b"x"
        assert entries is not None
        record = entries.ledger(ledger_id)
        assert record is not None and record.custom_metadata == {"k": b"v"}
    finally:
        reopened.close()
        if entries is not None:
            entries.close()


def test_no_opening_creates_a_file(tmp_path: Path) -> None:
    spec = sqlite(tmp_path / "absent" / "janitor.db")
    with pytest.raises(ConfigurationError, match=r"no embedded metadata store at .*janitor\.db"):
        open_metadata_store(spec)
    with pytest.raises(ConfigurationError, match=r"no embedded ledger store at .*janitor\.db"):
        open_ledger_storage(spec)
    with pytest.raises(ConfigurationError, match="no embedded ledger store"):
        open_embedded_ledgers(spec)
    assert not (tmp_path / "absent").exists()
    (tmp_path / "absent").mkdir()
    with pytest.raises(ConfigurationError, match="nothing is created"):
        open_store(spec)
    assert list((tmp_path / "absent").iterdir()) == []


def test_a_file_that_is_not_an_embedded_store_is_refused_unchanged(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    SqliteLedgerStorage(other).close()  # a ledger store, named as the metadata store
    before = other.read_bytes()
    with pytest.raises(LayoutError, match=r"no metadata_nodes table in .*other\.db"):
        open_metadata_store(sqlite(other))
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    with pytest.raises(LayoutError, match="no ledgers table"):
        open_ledger_storage(sqlite(text))
    assert other.read_bytes() == before and text.read_text() == "not a database"


def test_an_embedded_store_without_pulsars_roots_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bare.db"
    SqliteMetadataStore(path).close()  # the table, but nothing a cluster writes
    with pytest.raises(LayoutError, match=rf"no /admin in the embedded store {path}: wrong"):
        open_metadata_store(sqlite(path))


def test_bookie_http_needs_bookkeeper(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="bookieHttpServiceUrl needs a zk:"):
        open_ledger_storage(sqlite(tmp_path / "janitor.db"), bookie_http="http://bookie:8000")
    assert not (tmp_path / "janitor.db").exists()


def test_a_zk_url_opens_zookeeper() -> None:
    port = free_port()
    spec = StoreSpec(parse_store_url(f"zk:127.0.0.1:{port}/pulsar"), timeout=0.5)
    # Nothing listens there: only the ZooKeeper adapter would try to connect, and say where.
    with pytest.raises(TransientMetadataError, match=f"cannot reach ZooKeeper at 127.0.0.1:{port}"):
        open_metadata_store(spec)
    with pytest.raises(TransientMetadataError, match=f"cannot reach ZooKeeper at 127.0.0.1:{port}"):
        open_ledger_storage(spec)
    # BookKeeper's entries are on bookies: nothing to open, nothing connected to.
    assert open_embedded_ledgers(spec) is None


def test_a_spec_names_its_store() -> None:
    assert StoreSpec(parse_store_url("zk:h:2181,g:2182/pulsar")).where == (
        "ZooKeeper at h:2181,g:2182/pulsar"
    )
    assert StoreSpec(parse_store_url("etcd:http://e:2379")).where == "etcd at http://e:2379"
    assert StoreSpec(parse_store_url("sqlite:x.db")).where == "the embedded store x.db"


def test_the_specs_follow_the_configuration() -> None:
    config = ServiceConfiguration(
        metadata_store_url="zk:m:2181/pulsar", operation_timeout_seconds=7
    )
    assert StoreSpec.metadata(config).url == parse_store_url("zk:m:2181/pulsar")
    assert StoreSpec.metadata(config).timeout == 7.0
    # BookKeeper keeps its ledgers in the metadata store unless told otherwise.
    assert StoreSpec.ledgers(config).url == parse_store_url("zk:m:2181/pulsar")
    apart = ServiceConfiguration(
        metadata_store_url="zk:m:2181", bookkeeper_metadata_service_uri="zk:b:2181/ledgers"
    )
    assert StoreSpec.ledgers(apart).url == parse_store_url("zk:b:2181/ledgers")
    assert StoreSpec.ledgers(apart, "sqlite:x.db").url == parse_store_url("sqlite:x.db")
    with pytest.raises(ConfigurationError, match="invalid store URL 'zk://b:2181'"):
        StoreSpec.ledgers(apart, "zk://b:2181")


def test_a_spec_carries_the_digest_to_executors_unshown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DIGEST_ENV, "user:secret")
    spec = StoreSpec(parse_store_url("zk:h:2181"))
    monkeypatch.delenv(DIGEST_ENV)  # an executor's environment has no credentials
    shipped = pickle.loads(pickle.dumps(spec))
    assert shipped == spec and shipped.digest == "user:secret"
    assert "secret" not in repr(spec)
