"""Cursor acknowledgment state, its Pulsar wire formats, and its durable, rotated ledger.

- `AckState`: mark-delete position, per-ledger bitmaps of individual acks, PIP-54 batch
  indexes; `capture`/`restore` apply Pulsar's persistence caps and report truncation.
- Codecs: `encode_position_info`/`decode_position_info`, `encode_cursor_info`/
  `decode_cursor_info` (byte-compatible with MLDataFormats.proto), `compress`/`decompress`.
- `DurableCursor`: PIP-381 chunked or PIP-81 incremental persistence, the PIP-299 gate, and
  rotation that hands old cursor ledgers to phase one of the two-phase deletion.
"""

from cursor.ack.ack_state import AckState
from cursor.ack.positions import LedgerLayout, Position
from cursor.durable.durable_cursor import CursorStores, DurableCursor
from cursor.durable.gate import AckStateGate
from cursor.durable.rotation import Rotation, RotationOutcome
from cursor.persistence.capture import PersistReport, capture, restore
from cursor.persistence.settings import CursorSettings
from cursor.wire.compression import compress, decompress
from cursor.wire.content import (
    BatchIndexes,
    CursorInfoContent,
    LedgerBits,
    PositionInfoContent,
    RangeEncoding,
    WireRanges,
)
from cursor.wire.cursor_info_codec import decode_cursor_info, encode_cursor_info
from cursor.wire.position_info_codec import decode_position_info, encode_position_info

__all__ = [
    "AckState",
    "AckStateGate",
    "BatchIndexes",
    "CursorInfoContent",
    "CursorSettings",
    "CursorStores",
    "DurableCursor",
    "LedgerBits",
    "LedgerLayout",
    "PersistReport",
    "Position",
    "PositionInfoContent",
    "RangeEncoding",
    "Rotation",
    "RotationOutcome",
    "WireRanges",
    "capture",
    "compress",
    "decode_cursor_info",
    "decode_position_info",
    "decompress",
    "encode_cursor_info",
    "encode_position_info",
    "restore",
]
