"""The inventory: every ledger that exists, with its creation time and custom metadata.

On ZooKeeper the scan is distributed: the driver lists the top of BookKeeper's hierarchical
tree (`/ledgers/00/0000/L0001`, `/ledgers/000/0000/0000/0000/L0000`) down to enough
buckets, and each Spark partition walks its buckets with its own connection (the sidecar's
ZooKeeper adapter, opened read-only), reading the ledger znodes by pipelined multiRead
requests of 200 (deletion/adapters/stores/zookeeper_multiread.py). A
ZooKeeper error aborts the scan; a ledger deleted between listing and reading is simply
gone; a ledger whose metadata does not decode is kept with unknown custom metadata, so it
is never attributed nor enqueued.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from audit.scan.input_check import Scan
from audit.scan.local_rows import driver_scan
from audit.schema import INVENTORY_SCHEMA
from core.errors import DecodeError
from deletion.adapters.layout import require_ledgers_layout
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.opening import StoreSpec, open_embedded_ledgers, open_store
from deletion.domain.ports import MetadataStore
from deletion.wire import bookkeeper_metadata as formats
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

InventoryRow = tuple[int, int | None, dict[str, str] | None, int | None]
_LISTINGS = 16  # parents listed per round trip: up to 16 x 10,000 ledger names held


@dataclass(frozen=True)
class ZooKeeperTarget:
    """BookKeeper's ledger tree: the store holding it, and its root there."""

    store: StoreSpec
    root: str = "/ledgers"

    def open(self) -> MetadataStore:
        """The store, read as it is (nothing opens a store by making it)."""
        return open_store(self.store)


def ledger_row(ledger_id: int, data: bytes, znode_ctime_ms: int) -> InventoryRow:
    """One inventory row from a ledger znode. Pulsar does not store ctime in the metadata by
    default, so the znode's creation time is the age unless the metadata carries one."""
    try:
        metadata = formats.decode(data)
    except DecodeError:
        return (ledger_id, znode_ctime_ms, None, None)
    ctime = metadata.ctime if metadata.HasField("ctime") and metadata.ctime > 0 else None
    closed = metadata.state == LedgerMetadataFormat.CLOSED and metadata.HasField("length")
    custom = {e.key: e.value.decode("utf-8", "replace") for e in metadata.customMetadata}
    return (ledger_id, ctime or znode_ctime_ms, custom, metadata.length if closed else None)


def _max_depth(bucket: str) -> int:
    """Path components above the ledger nodes: 2 for the 2-4-4 layout, 4 for 3-4-4-4-4."""
    top = bucket.split("/", 1)[0]
    return {2: 2, 3: 4}.get(len(top), 0) if top.isdigit() else 0


def expand_buckets(children: Callable[[str], list[str]], root: str, wanted: int) -> list[str]:
    """Bucket paths (relative to `root`) to scan, expanded level by level to `wanted`."""
    level = sorted(name for name in children(root) if not formats.is_reserved(name))
    while len(level) < wanted:
        expandable = {b for b in level if b.count("/") + 1 < _max_depth(b)}
        if not expandable:
            break
        deeper: list[str] = []
        for bucket in level:
            if bucket in expandable:
                deeper.extend(f"{bucket}/{child}" for child in children(f"{root}/{bucket}"))
            else:
                deeper.append(bucket)
        level = deeper
    return level


def _ledger_nodes(store: MetadataStore, root: str, buckets: list[str]) -> Iterator[tuple[int, str]]:
    """Every ledger znode below the buckets, depth first, listing `_LISTINGS` parents per
    pipelined round trip; drawn lazily by the reads, so only those listings are held."""
    stack = buckets[::-1]
    while stack:
        parents = [stack.pop() for _ in range(min(_LISTINGS, len(stack)))]
        listings = store.children_many([f"{root}/{parent}" for parent in parents])
        deeper: list[str] = []
        for parent, names in zip(parents, listings, strict=True):
            for name in names:
                relative = f"{parent}/{name}"
                ledger_id = formats.ledger_id_of(relative)
                if ledger_id is not None:
                    yield ledger_id, f"{root}/{relative}"
                elif relative.count("/") < 4:
                    deeper.append(relative)
        stack.extend(reversed(deeper))


def scan_buckets(target: ZooKeeperTarget, buckets: Iterable[str]) -> Iterator[InventoryRow]:
    """One Spark partition: walk its buckets with its own connection, the reads streamed
    (a bounded window in flight) while the walk lists what comes next."""
    store = target.open()
    try:
        walk = _ledger_nodes(store, target.root, list(buckets))
        for ledger_id, node in store.get_stream(walk):
            if node is not None:  # else deleted since it was listed: it no longer exists
                yield ledger_row(ledger_id, node.data, node.stat.ctime_ms)
    finally:
        store.close()


def zookeeper_inventory(spark: SparkSession, target: ZooKeeperTarget) -> DataFrame:
    context = spark.sparkContext
    wanted = max(8, context.defaultParallelism * 4)
    store = target.open()
    try:
        require_ledgers_layout(store, target.store.where, target.root)
        buckets = expand_buckets(store.children, target.root, wanted)
    finally:
        store.close()
    slices = max(1, min(len(buckets), wanted))
    rows: Any = context.parallelize(buckets, slices).mapPartitions(partial(scan_buckets, target))
    # ledger_row builds every row in the schema's types; checking each again cost ~10% here
    return spark.createDataFrame(rows, INVENTORY_SCHEMA, verifySchema=False)


def embedded_inventory(spark: SparkSession, storage: SqliteLedgerStorage) -> Scan:
    """The embedded ledger store, read on the driver (it is one local file, which executors
    elsewhere would not see), with its figures (no job counts them); closed after."""
    try:
        rows: list[InventoryRow] = []
        for ledger_id in storage.ledger_ids():
            record = storage.ledger(ledger_id)
            if record is not None:
                custom = {
                    k: v.decode("utf-8", "replace") for k, v in record.custom_metadata.items()
                }
                rows.append((ledger_id, record.ctime_ms, custom, None))
    finally:
        storage.close()
    return driver_scan(spark, rows, INVENTORY_SCHEMA)


def ledger_inventory(spark: SparkSession, spec: StoreSpec) -> Scan:
    """Every ledger in the store: BookKeeper's tree walked on the executors (its figures
    counted by the first job over it), the embedded store read on the driver."""
    embedded = open_embedded_ledgers(spec)
    if embedded is None:
        return Scan(zookeeper_inventory(spark, ZooKeeperTarget(spec)))
    return embedded_inventory(spark, embedded)
