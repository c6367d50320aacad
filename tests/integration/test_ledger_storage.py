"""LedgerStorage on every backend, and BookKeeper's ledger tree on ZooKeeper: ids, both path
layouts, ctime and versions, corrupt metadata, outages."""

from __future__ import annotations

import time

import pytest

from config import parse_store_url
from core.errors import (
    DecodeError,
    TransientMetadataError,
)
from deletion.adapters.layout import BOOKKEEPER_LAYOUT
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.ports import ANY_VERSION, Deletion
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from harness.janitor import Backend, ZkLedgerFactory
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import free_port
from tests.integration.stores_rig import (
    CUSTOM,
    ShortAnswers,
    _bump_version,
    _znode,
    zk,
)

__all__ = ["zk"]  # the fixtures


def test_ledger_returns_custom_metadata_and_ctime(backend: Backend) -> None:
    ledger_id = backend.factory.create_ledger(CUSTOM)
    record = backend.ledgers.ledger(ledger_id)
    assert record is not None
    assert record.ledger_id == ledger_id
    assert dict(record.custom_metadata) == CUSTOM
    assert isinstance(record.ctime_ms, int)
    assert record.ctime_ms > 0
    assert record.version >= 0


def test_ledger_ids_grow(backend: Backend) -> None:
    first = backend.factory.create_ledger({})
    second = backend.factory.create_ledger({})
    assert second > first
    record = backend.ledgers.ledger(second)
    assert record is not None
    assert dict(record.custom_metadata) == {}


def test_unknown_ledger_is_none(backend: Backend) -> None:
    known = backend.factory.create_ledger(CUSTOM)
    assert backend.ledgers.ledger(known + 1000) is None


def test_delete_ledger_is_idempotent(backend: Backend) -> None:
    ledger_id = backend.factory.create_ledger(CUSTOM)
    other = backend.factory.create_ledger(CUSTOM)
    assert backend.ledgers.delete_ledger(ledger_id) is True
    assert backend.ledgers.ledger(ledger_id) is None
    assert backend.ledgers.delete_ledger(ledger_id) is False
    assert backend.ledgers.ledger(other) is not None


def test_versioned_delete_of_a_gone_ledger_is_false(backend: Backend) -> None:
    ledger_id = backend.factory.create_ledger(CUSTOM)
    seen = backend.ledgers.ledger(ledger_id)
    assert seen is not None
    assert backend.ledgers.delete_ledger(ledger_id) is True
    assert backend.ledgers.delete_ledger(ledger_id, seen.version) is False


def test_batched_ledger_reads_and_deletes_match_single_ones(backend: Backend) -> None:
    ids = [backend.factory.create_ledger({**CUSTOM, "n": bytes([i])}) for i in range(5)]
    missing = ids[-1] + 1000
    records = backend.ledgers.ledgers([*ids, missing])
    assert records[missing] is None
    assert [records[i] for i in ids] == [backend.ledgers.ledger(i) for i in ids]
    _bump_version(backend, ids[1])
    stale = {i: records[i].version for i in ids[:3]}  # type: ignore[union-attr]
    backend.ledgers.delete_ledger(ids[2])
    outcomes = backend.ledgers.delete_ledgers({**stale, missing: ANY_VERSION})
    assert outcomes == {
        ids[0]: Deletion.DELETED,
        ids[1]: Deletion.CHANGED,
        ids[2]: Deletion.GONE,
        missing: Deletion.GONE,
    }
    assert [backend.exists(i) for i in ids] == [False, True, False, True, True]


def test_large_ledger_ids_on_zookeeper(zk: Backend) -> None:
    ledger_id = ZkLedgerFactory(zk.metadata, first_id=2**40).create_ledger(CUSTOM)
    assert ledger_id == 2**40
    assert zk.metadata.get("/ledgers/000/0001/0995/1162/L7776") is not None
    record = zk.ledgers.ledger(ledger_id)
    assert record is not None
    assert dict(record.custom_metadata) == CUSTOM
    assert zk.ledgers.delete_ledger(ledger_id, record.version) is True
    assert zk.ledgers.ledger(ledger_id) is None
    assert zk.ledgers.delete_ledger(ledger_id) is False


def test_ledger_ids_around_integer_max_on_zookeeper(zk: Backend) -> None:
    factory = ZkLedgerFactory(zk.metadata, first_id=2**31 - 2)
    ids = [factory.create_ledger({"n": bytes([i])}) for i in range(3)]
    assert ids == [2**31 - 2, 2**31 - 1, 2**31]
    assert zk.metadata.children("/ledgers") == ["000", "21", "LAYOUT"]
    assert zk.metadata.get("/ledgers/21/4748/L3646") is not None
    assert zk.metadata.get("/ledgers/000/0000/0021/4748/L3647") is not None
    assert zk.metadata.get("/ledgers/000/0000/0021/4748/L3648") is not None
    for i, ledger_id in enumerate(ids):
        record = zk.ledgers.ledger(ledger_id)
        assert record is not None
        assert dict(record.custom_metadata) == {"n": bytes([i])}
        assert zk.ledgers.delete_ledger(ledger_id) is True
        assert zk.ledgers.ledger(ledger_id) is None


def test_zookeeper_ledger_ctime_and_version_come_from_the_znode(zk: Backend) -> None:
    ledger_id = zk.factory.create_ledger(CUSTOM)
    node = zk.metadata.get(bk.ledger_path(ledger_id))
    record = zk.ledgers.ledger(ledger_id)
    assert node is not None
    assert record is not None
    assert record.ctime_ms == node.stat.ctime_ms
    assert record.version == node.stat.version


def test_zookeeper_ledger_ctime_prefers_a_stored_ctime(zk: Backend) -> None:
    metadata = LedgerMetadataFormat(quorumSize=1, ensembleSize=1, length=0, ctime=12345)
    zk.metadata.create(bk.ledger_path(77), bk.encode_v3(metadata))
    record = zk.ledgers.ledger(77)
    assert record is not None
    assert record.ctime_ms == 12345


def test_zookeeper_corrupt_ledger_metadata_is_a_decode_error(zk: Backend) -> None:
    zk.metadata.create(bk.ledger_path(78), b"BookieMetadataFormatVersion\t3\n\x05\xff")
    with pytest.raises(DecodeError):
        zk.ledgers.ledger(78)


def test_zookeeper_batch_with_a_corrupt_ledger_fails_whole_after_every_reply(zk: Backend) -> None:
    good = zk.factory.create_ledger(CUSTOM)
    zk.metadata.create(bk.ledger_path(good + 1), b"BookieMetadataFormatVersion\t3\n\x05\xff")
    with pytest.raises(DecodeError):
        zk.ledgers.ledgers([good, good + 1])
    assert zk.ledgers.ledgers([good])[good] is not None  # the connection is still usable


def test_zookeeper_batch_on_a_lost_connection_is_transient(zk: Backend) -> None:
    ids = [zk.factory.create_ledger(CUSTOM) for _ in range(3)]
    store = zk.metadata
    assert isinstance(store, ZooKeeperMetadataStore)
    store.client.stop()
    with pytest.raises(TransientMetadataError):
        zk.ledgers.ledgers(ids)
    with pytest.raises(TransientMetadataError):
        zk.ledgers.delete_ledgers(dict.fromkeys(ids, ANY_VERSION))


def test_zookeeper_store_on_a_dead_port_is_transient() -> None:
    url = parse_store_url(f"zk:127.0.0.1:{free_port()}")
    with pytest.raises(TransientMetadataError):
        ZooKeeperMetadataStore.connect(url, timeout=1.0)


def test_zookeeper_store_with_chroot_on_a_dead_port_is_transient() -> None:
    url = parse_store_url(f"zk:127.0.0.1:{free_port()}/some/chroot")
    with pytest.raises(TransientMetadataError):
        ZooKeeperMetadataStore.connect(url, timeout=1.0)


def test_zookeeper_failures_name_the_path(zk: Backend) -> None:
    store = zk.metadata
    assert isinstance(store, ZooKeeperMetadataStore)
    store.client.stop()
    with pytest.raises(TransientMetadataError, match="/x/one"):
        store.get("/x/one")
    with pytest.raises(TransientMetadataError, match="/x/one"):
        store.delete("/x/one", 3)
    with pytest.raises(TransientMetadataError, match="/x/one"):
        store.get_many(["/x/one", "/x/two"])
    with pytest.raises(TransientMetadataError, match="/x/one"):
        store.delete_many([("/x/one", 3), ("/x/two", 4)])


def test_bookkeeper_storage_under_another_ledgers_root(zk: Backend) -> None:
    """zkLedgersRootPath is configurable: every read, listing and delete stays under it."""
    zk.metadata.create(bk.ledger_path(7), _znode({"at": b"default"}))
    zk.metadata.create(bk.ledger_path(7, "/other/ledgers"), _znode({"at": b"other"}))
    zk.metadata.create(bk.ledger_path(8, "/other/ledgers"), _znode({"at": b"other"}))
    zk.metadata.create("/other/ledgers/LAYOUT", BOOKKEEPER_LAYOUT)  # BookKeeper's, there too
    other = BookKeeperLedgerStorage(zk.metadata, root="/other/ledgers")
    record = other.ledger(7)
    assert record is not None and dict(record.custom_metadata) == {"at": b"other"}
    assert sorted(other.ledger_ids()) == [7, 8]
    assert other.delete_ledger(7, record.version) is True
    assert other.delete_ledgers({8: ANY_VERSION}) == {8: Deletion.DELETED}
    assert other.ledgers([7, 8]) == {7: None, 8: None}
    default = zk.ledgers.ledger(7)
    assert default is not None and dict(default.custom_metadata) == {"at": b"default"}


def test_ledger_ids_walks_both_layouts_and_skips_bookkeepers_own_nodes(zk: Backend) -> None:
    ids = [1, 2, 10_000, 2**31 - 2, 2**31 - 1, 2**40, 2**63 - 1]
    for ledger_id in ids:
        zk.metadata.create(bk.ledger_path(ledger_id), _znode({}))
    for own in [  # and LAYOUT, laid out with the chroot
        "/ledgers/INSTANCEID",
        "/ledgers/available/bookie-1:3181",
        "/ledgers/idgen/ID-0000000042",
        "/ledgers/cookies/bookie-1:3181",
        "/ledgers/underreplication/ledgers/00/0000/L0003",
        "/ledgers/00/0000/not-a-ledger",
        "/ledgers/000/0000/0000/0000/L000/deeper/L0009",
    ]:
        zk.metadata.create(own, b"")
    assert isinstance(zk.ledgers, BookKeeperLedgerStorage)
    assert sorted(zk.ledgers.ledger_ids()) == ids


def test_a_short_batch_answer_fails_instead_of_pairing_outcomes_wrongly(zk: Backend) -> None:
    store = zk.metadata
    assert isinstance(store, ZooKeeperMetadataStore)
    ids = [zk.factory.create_ledger(CUSTOM) for _ in range(2)]
    short = BookKeeperLedgerStorage(ShortAnswers(store.client))
    with pytest.raises(ValueError, match="zip"):
        short.ledgers(ids)
    with pytest.raises(ValueError, match="zip"):
        short.delete_ledgers(dict.fromkeys(ids, ANY_VERSION))


def test_a_zookeeper_outage_that_never_ends_fails_a_batch_instead_of_hanging(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """kazoo queues requests while it reconnects; the store must not wait for ever."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("outage")).start()
    store = ZooKeeperMetadataStore.connect(parse_store_url(f"zk:{server.hosts}"), timeout=1.0)
    try:
        store.create("/ledgers/00/0000/L0001", b"x")
        server.stop()
        started = time.monotonic()
        with pytest.raises(TransientMetadataError):
            store.get_many(["/ledgers/00/0000/L0001", "/ledgers/00/0000/L0002"])
        with pytest.raises(TransientMetadataError):
            store.delete_many([("/ledgers/00/0000/L0001", 0)])
        assert time.monotonic() - started < 20
    finally:
        server.stop()
        store.close()
