"""`ManagedCursorInfo`, the cursor's znode, byte for byte as Java writes it.

Fields in number order: 1 cursorsLedgerId, 2 markDeleteLedgerId, 3 markDeleteEntryId,
4 individualDeletedMessages, 5 properties, 6 lastActive, 7 batchedEntryDeletionIndexInfo,
8 cursorProperties. Only the MessageRange form exists here (no LongListMap field).
"""

from __future__ import annotations

from google.protobuf.message import DecodeError as ProtobufDecodeError

from core.errors import DecodeError
from cursor.ack import Position
from cursor.wire.content import CursorInfoContent
from cursor.wire.position_info_codec import batch_indexes, batch_message
from cursor.wire.range_encode import encode_message_ranges
from cursor.wire.wire_scan import LENGTH_DELIMITED, VARINT, scan
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import LongProperty, ManagedCursorInfo, StringProperty

RANGES_TAG = 0x22  # field 4, length-delimited
_WIRE_TYPES = {1: VARINT, 2: VARINT, 3: VARINT, 4: LENGTH_DELIMITED, 5: LENGTH_DELIMITED}
_WIRE_TYPES |= {6: VARINT, 7: LENGTH_DELIMITED, 8: LENGTH_DELIMITED}


def encode_cursor_info(content: CursorInfoContent) -> bytes:
    head = ManagedCursorInfo(cursorsLedgerId=content.cursors_ledger_id)
    if content.mark_delete is not None:
        head.markDeleteLedgerId, head.markDeleteEntryId = content.mark_delete
    tail = ManagedCursorInfo(
        properties=[LongProperty(name=k, value=v) for k, v in content.properties.items()],
        batchedEntryDeletionIndexInfo=[batch_message(b) for b in content.batch_indexes],
        cursorProperties=[
            StringProperty(name=k, value=v) for k, v in content.cursor_properties.items()
        ],
    )
    if content.last_active is not None:
        tail.lastActive = content.last_active
    return b"".join(
        (
            head.SerializePartialToString(),
            encode_message_ranges(content.ranges, RANGES_TAG),
            tail.SerializePartialToString(),
        )
    )


def decode_cursor_info(data: bytes, where: str = "ManagedCursorInfo") -> CursorInfoContent:
    scanned = scan(data, _WIRE_TYPES, range_field=4, bitset_field=None, where=where)
    message = ManagedCursorInfo()
    try:
        message.ParseFromString(scanned.rest)
    except ProtobufDecodeError as exc:
        raise DecodeError(f"{where}: corrupt ManagedCursorInfo: {exc}") from exc
    require_complete(message, where)
    mark_delete = None
    if message.HasField("markDeleteLedgerId") and message.HasField("markDeleteEntryId"):
        mark_delete = Position(message.markDeleteLedgerId, message.markDeleteEntryId)
    return CursorInfoContent(
        cursors_ledger_id=message.cursorsLedgerId,
        mark_delete=mark_delete,
        ranges=scanned.ranges,
        properties={p.name: p.value for p in message.properties},
        last_active=message.lastActive if message.HasField("lastActive") else None,
        batch_indexes=tuple(batch_indexes(b) for b in message.batchedEntryDeletionIndexInfo),
        cursor_properties={p.name: p.value for p in message.cursorProperties},
    )
