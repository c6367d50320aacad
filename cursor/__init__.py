"""Cursor acknowledgment state, its Pulsar wire formats, and its durable, rotated ledger.

The library's public API, one layer a package (each imports only those below it):
- `cursor.ack`: `AckState`, the mark-delete position, per-ledger bitmaps of individual
  acks, PIP-54 batch indexes;
- `cursor.wire`: `encode_position_info`/`decode_position_info`, `encode_cursor_info`/
  `decode_cursor_info` (byte-compatible with MLDataFormats.proto), `compress`/`decompress`;
- `cursor.persistence`: `capture`/`restore` apply Pulsar's persistence caps and report
  truncation; PIP-381 chunked and PIP-81 incremental layouts, and recovery from either;
- `cursor.durable`: `DurableCursor`, the PIP-299 gate, and rotation that hands old cursor
  ledgers to phase one of the two-phase deletion.
"""

from cursor.ack import AckState, LedgerLayout, Position
from cursor.durable import (
    AckStateGate,
    CursorMetadata,
    CursorStores,
    DurableCursor,
    Rotation,
    RotationOutcome,
)
from cursor.errors import (
    AckStateError,
    ChunkSequenceError,
    CursorNotFoundError,
    NoCompleteStateError,
    RotationError,
)
from cursor.persistence import CursorSettings, PersistReport, capture, restore
from cursor.wire import (
    BatchIndexes,
    CursorInfoContent,
    LedgerBits,
    PositionInfoContent,
    RangeEncoding,
    WireRanges,
    compress,
    compression_type,
    decode_cursor_info,
    decode_position_info,
    decompress,
    encode_cursor_info,
    encode_position_info,
)

__all__ = [
    "AckState",
    "AckStateError",
    "AckStateGate",
    "BatchIndexes",
    "ChunkSequenceError",
    "CursorInfoContent",
    "CursorMetadata",
    "CursorNotFoundError",
    "CursorSettings",
    "CursorStores",
    "DurableCursor",
    "LedgerBits",
    "LedgerLayout",
    "NoCompleteStateError",
    "PersistReport",
    "Position",
    "PositionInfoContent",
    "RangeEncoding",
    "Rotation",
    "RotationError",
    "RotationOutcome",
    "WireRanges",
    "capture",
    "compress",
    "compression_type",
    "decode_cursor_info",
    "decode_position_info",
    "decompress",
    "encode_cursor_info",
    "encode_position_info",
    "restore",
]
