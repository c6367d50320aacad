"""The MetadataStore and LedgerStorage contracts, against real ZooKeeper and real SQLite."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence

import pytest

from config import parse_store_url
from core.errors import (
    DecodeError,
    MetadataError,
    TransientMetadataError,
    VersionConflictError,
)
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.ports import ANY_VERSION, Deletion, Node
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from harness.janitor import Backend, ZkLedgerFactory, zookeeper_backend
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.embedded import free_port

BINARY = bytes(range(256)) + b"\x00\x00"

# --- MetadataStore ---------------------------------------------------------------------------


def test_get_missing_is_none(backend: Backend) -> None:
    assert backend.metadata.get("/no/such/node") is None


def test_create_then_get_returns_the_bytes(backend: Backend) -> None:
    stat = backend.metadata.create("/a", BINARY)
    node = backend.metadata.get("/a")
    assert node is not None
    assert node.data == BINARY
    assert stat.version == 0
    assert node.stat == stat


def test_create_makes_parents(backend: Backend) -> None:
    backend.metadata.create("/p/q/r", b"leaf")
    for parent in ("/p", "/p/q"):
        node = backend.metadata.get(parent)
        assert node is not None
        assert node.data == b""
    assert backend.metadata.children("/p") == ["q"]
    assert backend.metadata.children("/p/q") == ["r"]


def test_create_existing_is_a_version_conflict(backend: Backend) -> None:
    backend.metadata.create("/a", b"first")
    with pytest.raises(VersionConflictError):
        backend.metadata.create("/a", b"second")
    node = backend.metadata.get("/a")
    assert node is not None
    assert node.data == b"first"


def test_set_with_the_right_version(backend: Backend) -> None:
    created = backend.metadata.create("/a", b"v0")
    stat = backend.metadata.set("/a", b"v1", created.version)
    node = backend.metadata.get("/a")
    assert node is not None
    assert (node.data, node.stat.version) == (b"v1", stat.version)
    assert stat.version == created.version + 1


def test_set_with_a_wrong_version_changes_nothing(backend: Backend) -> None:
    backend.metadata.create("/a", b"v0")
    backend.metadata.set("/a", b"v1", 0)
    with pytest.raises(VersionConflictError):
        backend.metadata.set("/a", b"lost update", 0)
    node = backend.metadata.get("/a")
    assert node is not None
    assert (node.data, node.stat.version) == (b"v1", 1)


def test_set_of_a_missing_node_is_a_version_conflict(backend: Backend) -> None:
    with pytest.raises(VersionConflictError):
        backend.metadata.set("/missing", b"x")
    assert backend.metadata.get("/missing") is None


def test_versions_increase_and_any_version_always_writes(backend: Backend) -> None:
    versions = [backend.metadata.create("/a", b"0").version]
    for i in range(1, 4):
        versions.append(backend.metadata.set("/a", str(i).encode()).version)
    assert versions == [0, 1, 2, 3]
    node = backend.metadata.get("/a")
    assert node is not None
    assert (node.data, node.stat.version) == (b"3", 3)


def test_ctime_is_stable_across_set(backend: Backend) -> None:
    created = backend.metadata.create("/a", b"v0")
    backend.metadata.set("/a", b"v1")
    updated = backend.metadata.set("/a", b"v2")
    node = backend.metadata.get("/a")
    assert node is not None
    assert created.ctime_ms > 0
    assert updated.ctime_ms == created.ctime_ms
    assert node.stat.ctime_ms == created.ctime_ms
    assert node.stat.mtime_ms >= node.stat.ctime_ms


def test_children_are_sorted_and_empty_for_missing(backend: Backend) -> None:
    for name in ["b", "a b", "C", "a-1", "a", "%2F", "é"]:
        backend.metadata.create(f"/dir/{name}", b"")
    backend.metadata.create("/dir/a/grandchild", b"")
    assert backend.metadata.children("/dir") == sorted(["b", "a b", "C", "a-1", "a", "%2F", "é"])
    assert backend.metadata.children("/dir/b") == []
    assert backend.metadata.children("/nowhere") == []


def test_delete_returns_true_then_false(backend: Backend) -> None:
    backend.metadata.create("/a", b"")
    assert backend.metadata.delete("/a") is True
    assert backend.metadata.get("/a") is None
    assert backend.metadata.delete("/a") is False
    assert backend.metadata.delete("/never/existed") is False


def test_delete_with_the_right_version(backend: Backend) -> None:
    backend.metadata.create("/a", b"")
    stat = backend.metadata.set("/a", b"x")
    assert backend.metadata.delete("/a", stat.version) is True
    assert backend.metadata.get("/a") is None


def test_delete_with_a_wrong_version_is_a_conflict(backend: Backend) -> None:
    backend.metadata.create("/a", b"")
    backend.metadata.set("/a", b"x")
    with pytest.raises(VersionConflictError, match=r"^/a is"):
        backend.metadata.delete("/a", 0)
    assert backend.metadata.get("/a") is not None


def test_delete_with_children_is_a_metadata_error(backend: Backend) -> None:
    backend.metadata.create("/a/child", b"")
    with pytest.raises(MetadataError, match=r"^/a has children") as info:
        backend.metadata.delete("/a")
    assert not isinstance(info.value, VersionConflictError)
    assert backend.metadata.get("/a") is not None
    assert backend.metadata.children("/a") == ["child"]


def test_recreate_after_delete_starts_at_version_zero(backend: Backend) -> None:
    backend.metadata.create("/a", b"")
    backend.metadata.set("/a", b"x")
    backend.metadata.delete("/a")
    assert backend.metadata.create("/a", b"again").version == 0


@pytest.mark.parametrize("path", ["/a/../b", "/a/./b"])
def test_relative_path_segments_are_a_metadata_error(backend: Backend, path: str) -> None:
    with pytest.raises(MetadataError, match=re.escape(path)):
        backend.metadata.get(path)
    with pytest.raises(MetadataError, match=re.escape(path)):
        backend.metadata.get_many([path, "/fine"])
    with pytest.raises(MetadataError, match=re.escape(path)):
        backend.metadata.delete_many([(path, ANY_VERSION), ("/fine", ANY_VERSION)])


# --- LedgerStorage ---------------------------------------------------------------------------

CUSTOM = {
    "application": b"pulsar",
    "component": b"managed-ledger",
    "pulsar/managed-ledger": b"t/ns/persistent/a+b",
    "binary": b"\x00\xff",
}


def _bump_version(backend: Backend, ledger_id: int) -> None:
    """Change the ledger's metadata version, as a concurrent close or recovery would."""
    if isinstance(backend.factory, SqliteLedgerStorage):
        backend.factory.close_ledger(ledger_id)
    else:
        path = bk.ledger_path(ledger_id)
        node = backend.metadata.get(path)
        assert node is not None
        backend.metadata.set(path, node.data, node.stat.version)


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


def test_versioned_delete_with_a_stale_version_is_a_conflict(backend: Backend) -> None:
    ledger_id = backend.factory.create_ledger(CUSTOM)
    seen = backend.ledgers.ledger(ledger_id)
    assert seen is not None
    _bump_version(backend, ledger_id)
    with pytest.raises(VersionConflictError):
        backend.ledgers.delete_ledger(ledger_id, seen.version)
    current = backend.ledgers.ledger(ledger_id)
    assert current is not None
    assert current.version > seen.version
    assert backend.ledgers.delete_ledger(ledger_id, current.version) is True
    assert backend.ledgers.ledger(ledger_id) is None


def test_versioned_delete_of_a_gone_ledger_is_false(backend: Backend) -> None:
    ledger_id = backend.factory.create_ledger(CUSTOM)
    seen = backend.ledgers.ledger(ledger_id)
    assert seen is not None
    assert backend.ledgers.delete_ledger(ledger_id) is True
    assert backend.ledgers.delete_ledger(ledger_id, seen.version) is False


# --- batches --------------------------------------------------------------------------------


def test_get_many_answers_in_order_with_none_for_missing(backend: Backend) -> None:
    backend.metadata.create("/b/one", b"1")
    backend.metadata.create("/b/two", b"2")
    nodes = backend.metadata.get_many(["/b/two", "/b/missing", "/b/one"])
    assert [node.data if node else None for node in nodes] == [b"2", None, b"1"]
    assert backend.metadata.get_many([]) == []


def test_delete_many_says_how_each_ended(backend: Backend) -> None:
    for name in ("kept", "moved", "plain"):
        backend.metadata.create(f"/d/{name}", b"x")
    moved = backend.metadata.get("/d/moved")
    assert moved is not None
    backend.metadata.set("/d/moved", b"y", moved.stat.version)
    outcomes = backend.metadata.delete_many(
        [("/d/plain", 0), ("/d/missing", ANY_VERSION), ("/d/moved", moved.stat.version)]
    )
    assert outcomes == [Deletion.DELETED, Deletion.GONE, Deletion.CHANGED]
    assert backend.metadata.children("/d") == ["kept", "moved"]


def test_empty_batches_ask_nothing(backend: Backend) -> None:
    assert backend.metadata.get_many([]) == []
    assert backend.metadata.delete_many([]) == []
    assert backend.ledgers.ledgers([]) == {}
    assert backend.ledgers.delete_ledgers({}) == {}


def test_a_batch_delete_of_a_node_with_children_fails_naming_it(backend: Backend) -> None:
    backend.metadata.create("/d/parent/child", b"")
    with pytest.raises(MetadataError, match="/d/parent") as info:
        backend.metadata.delete_many([("/d/parent", ANY_VERSION)])
    assert not isinstance(info.value, VersionConflictError)
    assert backend.metadata.children("/d/parent") == ["child"]


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


# --- ZooKeeper only --------------------------------------------------------------------------


@pytest.fixture
def zk(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[Backend]:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    yield backend
    backend.ledgers.close()  # closes the shared store too


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
    assert zk.metadata.children("/ledgers") == ["000", "21"]
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


def _znode(custom: dict[str, bytes]) -> bytes:
    metadata = LedgerMetadataFormat(quorumSize=1, ensembleSize=1, length=0)
    for key, value in custom.items():
        metadata.customMetadata.add(key=key, value=value)
    return bk.encode_v3(metadata)


def test_bookkeeper_storage_under_another_ledgers_root(zk: Backend) -> None:
    """zkLedgersRootPath is configurable: every read, listing and delete stays under it."""
    zk.metadata.create(bk.ledger_path(7), _znode({"at": b"default"}))
    zk.metadata.create(bk.ledger_path(7, "/other/ledgers"), _znode({"at": b"other"}))
    zk.metadata.create(bk.ledger_path(8, "/other/ledgers"), _znode({"at": b"other"}))
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
    for own in [
        "/ledgers/LAYOUT",
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


class ShortAnswers(ZooKeeperMetadataStore):
    """A store whose batches answer one outcome fewer than they were asked."""

    def get_many(self, paths: Sequence[str]) -> list[Node | None]:
        return super().get_many(paths)[:-1]

    def delete_many(self, versions: Sequence[tuple[str, int]]) -> list[Deletion]:
        return super().delete_many(versions)[:-1]


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
