"""Cursor acknowledgment state, its Pulsar wire formats, and its durable, rotated ledger.

- `AckState`: mark-delete position, per-ledger bitmaps of individual acks, PIP-54 batch
  indexes; `capture`/`restore` apply Pulsar's persistence caps and report truncation.
- Codecs: `encode_position_info`/`decode_position_info`, `encode_cursor_info`/
  `decode_cursor_info` (byte-compatible with MLDataFormats.proto), `compress`/`decompress`.
- `DurableCursor`: PIP-381 chunked or PIP-81 incremental persistence, the PIP-299 gate, and
  rotation that hands old cursor ledgers to phase one of the two-phase deletion.
"""

from .ack_state import AckState
from .capture import PersistReport, capture, restore
from .compression import compress, decompress
from .content import (
    BatchIndexes,
    CursorInfoContent,
    LedgerBits,
    PositionInfoContent,
    RangeEncoding,
    WireRanges,
)
from .cursor_info_codec import decode_cursor_info, encode_cursor_info
from .durable_cursor import CursorStores, DurableCursor
from .gate import AckStateGate
from .position_info_codec import decode_position_info, encode_position_info
from .positions import LedgerLayout, Position
from .rotation import Rotation, RotationOutcome
from .settings import CursorSettings

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
