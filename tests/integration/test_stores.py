"""The MetadataStore contract, on every backend: reads, versioned writes and deletes, children,
batches."""

from __future__ import annotations

import re

import pytest

from core.errors import (
    MetadataError,
    VersionConflictError,
)
from deletion.domain.ports import ANY_VERSION, Deletion
from harness.janitor import Backend
from tests.integration.stores_rig import (
    BINARY,
    CUSTOM,
    _bump_version,
)


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
