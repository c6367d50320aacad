"""Which adapter a store URL opens, and what a read-only opening refuses to create."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from config import ServiceConfiguration, parse_store_url
from core.errors import ConfigurationError, TransientMetadataError
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.opening import (
    StoreSpec,
    open_embedded_ledgers,
    open_ledger_storage,
    open_metadata_store,
)
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.adapters.stores.zookeeper import DIGEST_ENV
from ledger_janitor.demo.embedded import free_port


def sqlite(path: Path) -> StoreSpec:
    return StoreSpec(parse_store_url(f"sqlite:{path}"))


def test_a_sqlite_url_opens_the_embedded_stores_making_the_directory(tmp_path: Path) -> None:
    spec = sqlite(tmp_path / "new" / "janitor.db")
    metadata = open_metadata_store(spec)
    ledgers = open_ledger_storage(spec)
    try:
        assert isinstance(metadata, SqliteMetadataStore)
        assert isinstance(ledgers, SqliteLedgerStorage)
        metadata.create("/a", b"x")
        ledger_id = ledgers.create_ledger({"k": b"v"})
    finally:
        ledgers.close()
        metadata.close()
    reopened = open_metadata_store(spec, create=False)
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


def test_a_read_only_opening_creates_no_file(tmp_path: Path) -> None:
    spec = sqlite(tmp_path / "absent" / "janitor.db")
    with pytest.raises(ConfigurationError, match=r"no embedded metadata store at .*janitor\.db"):
        open_metadata_store(spec, create=False)
    with pytest.raises(ConfigurationError, match=r"no embedded ledger store at .*janitor\.db"):
        open_ledger_storage(spec, create=False)
    with pytest.raises(ConfigurationError, match="no embedded ledger store"):
        open_embedded_ledgers(spec)
    assert not (tmp_path / "absent").exists()


def test_bookie_http_needs_bookkeeper(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="bookieHttpServiceUrl needs a zk:"):
        open_ledger_storage(sqlite(tmp_path / "janitor.db"), bookie_http="http://bookie:8000")
    assert not (tmp_path / "janitor.db").exists()


def test_a_zk_url_opens_zookeeper() -> None:
    port = free_port()
    spec = StoreSpec(parse_store_url(f"zk:127.0.0.1:{port}/pulsar"), timeout=0.5)
    # Nothing listens there: only the ZooKeeper adapter would try to connect, and say where.
    for create in (True, False):
        with pytest.raises(
            TransientMetadataError, match=f"cannot reach ZooKeeper at 127.0.0.1:{port}"
        ):
            open_metadata_store(spec, create=create)
        with pytest.raises(
            TransientMetadataError, match=f"cannot reach ZooKeeper at 127.0.0.1:{port}"
        ):
            open_ledger_storage(spec, create=create)
    # BookKeeper's entries are on bookies: nothing to open, nothing connected to.
    assert open_embedded_ledgers(spec) is None


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
