"""The one walk over a topic's Pulsar metadata that lists the ledgers it references.

The worker's in-use check (`pulsar_metadata.MetadataInUseLedgers`) and the audit's
reference scan (`audit.pulsar_refs`, inside Spark tasks) both call these functions, so the
two can never disagree on what "referenced" means. The layout is Pulsar's:
`/managed-ledgers/<ml name>` holds a ManagedLedgerInfo (possibly behind the 0x4778
compression header), each child one ManagedCursorInfo (the `__compaction` cursor's
`CompactedTopicLedger` property names the compacted ledger), and `/schemas/<schema id>` a
SchemaLocator. Any read or decode error propagates: unreadable metadata is "unknown", never
"no references".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from core.errors import DecodeError
from deletion.domain.ports import MetadataStore
from deletion.wire.metadata_codec import unwrap
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator

COMPACTION_CURSOR = "__compaction"
COMPACTED_LEDGER_PROPERTY = "CompactedTopicLedger"


class Holder(Enum):
    """What part of a topic's metadata holds the reference."""

    MANAGED_LEDGER = "MANAGED_LEDGER"
    MANAGED_CURSOR = "MANAGED_CURSOR"
    SCHEMA_STORAGE = "SCHEMA_STORAGE"
    COMPACTED = "COMPACTED"


@dataclass(frozen=True)
class Reference:
    ledger_id: int
    holder: Holder
    # Offloaded, and the BookKeeper copy already deleted (ManagedLedgerInfo's offload context).
    bookkeeper_deleted: bool = False


def parse(message: Message, data: bytes, where: str) -> None:
    """Parse a metadata value, compressed or not; anything malformed is a DecodeError."""
    try:
        message.ParseFromString(unwrap(data, where))
    except ProtobufDecodeError as exc:
        raise DecodeError(f"{where}: corrupt {type(message).__name__}: {exc}") from exc
    require_complete(message, where)


def managed_ledger_references(store: MetadataStore, path: str) -> list[Reference] | None:
    """The ledgers and cursor ledgers of the managed ledger at `path`; None if it is absent."""
    node = store.get(path)
    if node is None:
        return None
    info = ManagedLedgerInfo()
    parse(info, node.data, path)
    found = [
        Reference(
            ledger.ledgerId,
            Holder.MANAGED_LEDGER,
            ledger.HasField("offloadContext") and ledger.offloadContext.bookkeeperDeleted,
        )
        for ledger in info.ledgerInfo
    ]
    for cursor_name in store.children(path):
        found.extend(_cursor_references(store, f"{path}/{cursor_name}", cursor_name))
    return found


def _cursor_references(store: MetadataStore, path: str, cursor_name: str) -> list[Reference]:
    node = store.get(path)
    if node is None:  # deleted between the listing and the read
        return []
    cursor = ManagedCursorInfo()
    parse(cursor, node.data, path)
    found = []
    if cursor.cursorsLedgerId >= 0:
        found.append(Reference(cursor.cursorsLedgerId, Holder.MANAGED_CURSOR))
    if cursor_name == COMPACTION_CURSOR:
        # Best effort: the latest value may sit in the cursor ledger, out of reach here;
        # compacted ledgers are never deletable through a managed-ledger message anyway,
        # since their metadata says component=compactor.
        found.extend(
            Reference(p.value, Holder.COMPACTED)
            for p in cursor.properties
            if p.name == COMPACTED_LEDGER_PROPERTY
        )
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
