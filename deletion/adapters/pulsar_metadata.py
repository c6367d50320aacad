"""Pulsar's own metadata layout, read and written through a MetadataStore.

`MetadataInUseLedgers` is the InUseLedgers adapter over the one reference walk in
`references`; the writers are used by the embedded default and the tests.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from core.clock import WallClock, wall_clock
from core.errors import DecodeError, VersionConflictError
from deletion.adapters.layout import (
    BOOKKEEPER_LAYOUT,
    PULSAR_ROOTS,
    layout_path,
    policies_path,
    require_namespace,
)
from deletion.domain.kinds import cursor_name
from deletion.domain.ports import ANY_VERSION, Creators, MetadataStore, Stat, TopicLedgers
from deletion.domain.references import (
    COMPACTED_LEDGER_PROPERTY,
    COMPACTION_CURSOR,
    Holder,
    parse,
    schema_references,
    walk_managed_ledger,
)
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path, schema_path
from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator

__all__ = [
    "COMPACTED_LEDGER_PROPERTY",
    "COMPACTION_CURSOR",
    "ManagedLedgerWriter",
    "MetadataInUseLedgers",
    "parse",
]


class MetadataInUseLedgers:
    """InUseLedgers read straight from Pulsar's metadata store.

    A read or decode failure propagates: it means "unknown", never "not in use". A topic
    absent from the store counts as deleted only where the store holds its namespace
    (deletion.adapters.layout.require_namespace, read after the topic's own nodes).
    """

    def __init__(
        self, store: MetadataStore, clock: WallClock = wall_clock, where: str = "the metadata store"
    ) -> None:
        self._store = store
        self._clock = clock
        self._where = where

    def fetch(self, topic: TopicName) -> TopicLedgers:
        # Read the clock first: the snapshot is at least as fresh as fetched_at.
        fetched_at = self._clock()
        walk = walk_managed_ledger(self._store, managed_ledger_path(topic))
        schemas = schema_references(self._store, schema_path(topic)) or []
        managed = walk.references if walk is not None else []
        found = [*managed, *schemas]
        ids = frozenset(ref.ledger_id for ref in found)
        offloads: dict[int, set[str]] = {}
        for ref in found:
            if ref.offload is not None:
                offloads.setdefault(ref.ledger_id, set()).add(ref.offload.uuid)
        uuids = {ledger_id: frozenset(named) for ledger_id, named in offloads.items()}
        if walk is None:
            require_namespace(self._store, topic, self._where)
            return TopicLedgers(topic, False, ids, fetched_at, uuids, Creators(None, {}), {})
        data = [ref.ledger_id for ref in managed if ref.holder is Holder.MANAGED_LEDGER]
        creators = Creators(max(data, default=None), walk.cursor_ledgers)
        acked = {cursor_name(name): mark for name, mark in walk.mark_deleted.items()}
        return TopicLedgers(topic, True, ids, fetched_at, uuids, creators, acked, walk.compacted)


class ManagedLedgerWriter:
    """Writes Pulsar's layout: used by the embedded default, the demo and the tests."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    def lay_out(self, bookkeeper: bool = True) -> None:
        """The cluster's roots, as `initialize-cluster-metadata`, the first bookie and the
        first topic leave them: `/admin`, `/managed-ledgers`, and (`bookkeeper`: ledgers
        kept as BookKeeper keeps them, in this store) `/ledgers/LAYOUT`."""
        paths = {root: b"" for root in PULSAR_ROOTS}
        if bookkeeper:
            paths[layout_path()] = BOOKKEEPER_LAYOUT
        for path, data in paths.items():
            self._ensure(path, data)

    def ensure_namespace(self, namespace: NamespaceName) -> None:
        """The tenant's and the namespace's policies nodes, as `pulsar-admin tenants create`
        and `namespaces create` write them (TenantInfo, Policies as JSON)."""
        self._ensure(
            f"/admin/policies/{namespace.tenant}", b'{"adminRoles":[],"allowedClusters":[]}'
        )
        self._ensure(policies_path(namespace), b"{}")

    def _ensure(self, path: str, data: bytes) -> None:
        if self._store.get(path) is None:
            with contextlib.suppress(VersionConflictError):  # made meanwhile by another
                self._store.create(path, data)

    def read(self, topic: TopicName) -> tuple[ManagedLedgerInfo, int] | None:
        node = self._store.get(managed_ledger_path(topic))
        if node is None:
            return None
        info = ManagedLedgerInfo()
        parse(info, node.data, managed_ledger_path(topic))
        return info, node.stat.version

    def write(self, topic: TopicName, ledger_ids: Iterable[int], version: int | None) -> Stat:
        """Create (version None) or compare-and-set the topic's ledger list."""
        info = ManagedLedgerInfo()
        for ledger_id in ledger_ids:
            info.ledgerInfo.add(ledgerId=ledger_id, entries=0, size=0, timestamp=0)
        data = info.SerializeToString()
        path = managed_ledger_path(topic)
        if version is None:
            self.ensure_namespace(topic.namespace)  # Pulsar makes no topic without one
            return self._store.create(path, data)
        return self._store.set(path, data, version)

    def remove_ledgers(self, topic: TopicName, ledger_ids: Iterable[int]) -> Stat:
        """Drop ledgers from the list with a compare-and-set, as the broker's trimming does."""
        current = self.read(topic)
        if current is None:
            raise DecodeError(f"no managed ledger for {topic}")
        info, version = current
        gone = set(ledger_ids)
        return self.write(
            topic, [li.ledgerId for li in info.ledgerInfo if li.ledgerId not in gone], version
        )

    def write_cursor(self, topic: TopicName, cursor: str, cursor_ledger_id: int) -> Stat:
        path = f"{managed_ledger_path(topic)}/{cursor}"
        data = ManagedCursorInfo(cursorsLedgerId=cursor_ledger_id).SerializeToString()
        if self._store.get(path) is None:
            return self._store.create(path, data)
        return self._store.set(path, data, ANY_VERSION)

    def write_schema(self, topic: TopicName, ledger_ids: list[int]) -> Stat:
        locator = SchemaLocator()
        for version, ledger_id in enumerate(ledger_ids):
            entry = locator.index.add(version=version, hash=b"")
            entry.position.ledgerId, entry.position.entryId = ledger_id, 0
        locator.info.CopyFrom(locator.index[-1])
        path, data = schema_path(topic), locator.SerializeToString()
        if self._store.get(path) is None:
            self.ensure_namespace(topic.namespace)
            return self._store.create(path, data)
        return self._store.set(path, data, ANY_VERSION)
