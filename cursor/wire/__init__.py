"""The cursor's Pulsar wire formats: PositionInfo, ManagedCursorInfo, their big repeated
fields, PIP-81's ack index, and compression.

The names the layers above use; modules inside this layer import each other directly.
"""

from cursor.wire import ack_index
from cursor.wire.ack_index import IndexEntry
from cursor.wire.compression import (
    compress,
    compression_type,
    decode_state,
    decode_state_pieces,
    decompress,
    encode_state,
)
from cursor.wire.content import (
    BatchIndexes,
    CursorInfoContent,
    LedgerBits,
    PositionInfoContent,
    RangeEncoding,
    WireRanges,
)
from cursor.wire.cursor_info_codec import decode_cursor_info, encode_cursor_info
from cursor.wire.position_info_codec import (
    decode_position_info,
    encode_position_info,
    split_position_info_pieces,
)

__all__ = [
    "BatchIndexes",
    "CursorInfoContent",
    "IndexEntry",
    "LedgerBits",
    "PositionInfoContent",
    "RangeEncoding",
    "WireRanges",
    "ack_index",
    "compress",
    "compression_type",
    "decode_cursor_info",
    "decode_position_info",
    "decode_state",
    "decode_state_pieces",
    "decompress",
    "encode_cursor_info",
    "encode_position_info",
    "encode_state",
    "split_position_info_pieces",
]
