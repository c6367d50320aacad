"""The one walk over a topic's Pulsar metadata that lists the ledgers it references.

The worker's in-use check (`pulsar_metadata.MetadataInUseLedgers`) and the audit's
reference scan (`audit.scan.pulsar_refs`, inside Spark tasks) both call these functions, so the
two can never disagree on what "referenced" means. The layout is Pulsar's:
`/managed-ledgers/<ml name>` holds a ManagedLedgerInfo (possibly behind the 0x4778
compression header), each child one ManagedCursorInfo (the `__compaction` cursor's
`CompactedTopicLedger` property names the compacted ledger, a subscription's
`#pulsar.internal.delayed.bucket_*` properties its delayed-delivery bucket snapshots), and
`/schemas/<schema id>` a SchemaLocator. Any read or decode error propagates: unreadable
metadata is "unknown", never "no references".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from core.errors import DecodeError
from deletion.domain.ports import MetadataStore
from deletion.wire.metadata_codec import unwrap
from deletion.wire.offload_context import java_uuid
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import (
    ManagedCursorInfo,
    ManagedLedgerInfo,
    OffloadContext,
)
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator

COMPACTION_CURSOR = "__compaction"
COMPACTED_LEDGER_PROPERTY = "CompactedTopicLedger"
# BucketDelayedDeliveryTracker.DELAYED_BUCKET_KEY_PREFIX: a sealed bucket's snapshot ledger is
# the value of the cursor property `<prefix>_<startLedgerId>_<endLedgerId>` (Bucket.bucketKey),
# in the cursor znode's `cursorProperties` (ManagedCursorImpl.putCursorProperty writes the
# znode itself, never the cursor ledger): pulsar-broker/src/main/java/org/apache/pulsar/broker/
# delayed/bucket/BucketDelayedDeliveryTracker.java, Bucket.java (Pulsar 4.0.8).
DELAYED_BUCKET_PREFIX = "#pulsar.internal.delayed.bucket"
BUCKET_PROPERTY = "bucket"  # TieredStorageConfiguration.METADATA_FIELD_BUCKET


class Holder(Enum):
    """What part of a topic's metadata holds the reference."""

    MANAGED_LEDGER = "MANAGED_LEDGER"
    MANAGED_CURSOR = "MANAGED_CURSOR"
    SCHEMA_STORAGE = "SCHEMA_STORAGE"
    COMPACTED = "COMPACTED"
    DELAYED_BUCKET = "DELAYED_BUCKET"  # a subscription's delayed-delivery bucket snapshot


@dataclass(frozen=True)
class Reference:
    ledger_id: int
    holder: Holder
    # Offloaded, and the BookKeeper copy already deleted (ManagedLedgerInfo's offload context).
    bookkeeper_deleted: bool = False
    # The offload this ledger's metadata names (LedgerInfo.offloadContext), if any: its UUID,
    # whether the offloader finished, its driver, and the driver's `bucket` property.
    offload: OffloadRef | None = None
    # What the managed ledger records of the ledger (LedgerInfo.entries, .size), if known.
    entries: int | None = None
    size: int | None = None


@dataclass(frozen=True)
class OffloadRef:
    """One offloaded copy a ledger's metadata points at; the objects are named by `uuid`."""

    uuid: str
    complete: bool
    driver: str | None = None
    bucket: str | None = None


def parse(message: Message, data: bytes, where: str) -> None:
    """Parse a metadata value, compressed or not; anything malformed is a DecodeError."""
    try:
        message.ParseFromString(unwrap(data, where))
    except ProtobufDecodeError as exc:
        raise DecodeError(f"{where}: corrupt {type(message).__name__}: {exc}") from exc
    require_complete(message, where)


@dataclass(frozen=True)
class ManagedLedgerWalk:
    """A managed ledger's references, and what each of its cursors records as its ledger
    (-1 for a cursor that has none yet: it exists, and may be creating its first)."""

    references: list[Reference]
    cursor_ledgers: dict[str, int]
    # Each cursor's mark-delete ledger as its znode has it (-1: none), by its znode's name.
    mark_deleted: dict[str, int] = field(default_factory=dict)
    # The compacted ledger the `__compaction` cursor's znode names (None: no such property).
    compacted: int | None = None


def managed_ledger_references(store: MetadataStore, path: str) -> list[Reference] | None:
    """The ledgers and cursor ledgers of the managed ledger at `path`; None if it is absent."""
    walk = walk_managed_ledger(store, path)
    return None if walk is None else walk.references


def walk_managed_ledger(store: MetadataStore, path: str) -> ManagedLedgerWalk | None:
    """`managed_ledger_references`, with each cursor's recorded ledger; None if absent."""
    node = store.get(path)
    if node is None:
        return None
    info = ManagedLedgerInfo()
    parse(info, node.data, path)
    found = [_ledger_reference(ledger) for ledger in info.ledgerInfo]
    cursors: dict[str, int] = {}
    marks: dict[str, int] = {}
    compacted = None
    for cursor_name in store.children(path):
        cursor = _cursor(store, f"{path}/{cursor_name}")
        if cursor is None:  # deleted between the listing and the read
            continue
        cursors[cursor_name] = cursor.cursorsLedgerId
        marks[cursor_name] = (
            cursor.markDeleteLedgerId if cursor.HasField("markDeleteLedgerId") else -1
        )
        references = _cursor_references(cursor, cursor_name)
        compacted = next(
            (r.ledger_id for r in references if r.holder is Holder.COMPACTED), compacted
        )
        found.extend(references)
    return ManagedLedgerWalk(found, cursors, marks, compacted)


def _ledger_reference(ledger: ManagedLedgerInfo.LedgerInfo) -> Reference:
    context = ledger.offloadContext if ledger.HasField("offloadContext") else None
    return Reference(
        ledger.ledgerId,
        Holder.MANAGED_LEDGER,
        context is not None and context.bookkeeperDeleted,
        _offload(context) if context is not None else None,
        ledger.entries if ledger.HasField("entries") else None,
        ledger.size if ledger.HasField("size") else None,
    )


def _offload(context: OffloadContext) -> OffloadRef | None:
    """The offload named by the context (OffloadUtils.setOffloadDriverMetadata writes the
    driver; ManagedLedgerImpl.prepareLedgerInfoForOffloaded the UUID, before any object is
    written, and `complete` once they all are); None when it names no UUID."""
    if not (context.HasField("uidMsb") and context.HasField("uidLsb")):
        return None
    driver, bucket = None, None
    if context.HasField("driverMetadata"):
        driver = context.driverMetadata.name or None
        # A HashMap in Java: the last value of a repeated key wins.
        for pair in context.driverMetadata.properties:
            if pair.key == BUCKET_PROPERTY:
                bucket = pair.value or None
    uuid = java_uuid(context.uidMsb, context.uidLsb)
    return OffloadRef(uuid, context.complete, driver, bucket)


def _cursor(store: MetadataStore, path: str) -> ManagedCursorInfo | None:
    node = store.get(path)
    if node is None:
        return None
    cursor = ManagedCursorInfo()
    parse(cursor, node.data, path)
    return cursor


def _cursor_references(cursor: ManagedCursorInfo, cursor_name: str) -> list[Reference]:
    found = []
    if cursor.cursorsLedgerId >= 0:
        found.append(Reference(cursor.cursorsLedgerId, Holder.MANAGED_CURSOR))
    if cursor_name == COMPACTION_CURSOR:
        # The znode's value may lag the cursor ledger's: a compacted ledger is deleted only
        # once this znode shows a later compaction recorded (deletion/domain/kinds.py).
        found.extend(
            Reference(p.value, Holder.COMPACTED)
            for p in cursor.properties
            if p.name == COMPACTED_LEDGER_PROPERTY
        )
    for prop in cursor.cursorProperties:
        if prop.name.startswith(DELAYED_BUCKET_PREFIX):
            try:
                found.append(Reference(int(prop.value), Holder.DELAYED_BUCKET))
            except ValueError as exc:
                raise DecodeError(f"cursor property {prop.name}: not a ledger id") from exc
    return found


def schema_references(store: MetadataStore, path: str) -> list[Reference] | None:
    """The ledgers of every schema version in the SchemaLocator at `path`; None if absent."""
    node = store.get(path)
    if node is None:
        return None
    locator = SchemaLocator()
    parse(locator, node.data, path)
    entries = [locator.info, *locator.index]
    ids = {entry.position.ledgerId for entry in entries if entry.HasField("position")}
    return [Reference(ledger_id, Holder.SCHEMA_STORAGE) for ledger_id in sorted(ids)]
