"""A cursor's acknowledgment state in memory: positions, per-ledger bitmaps, the LRU of PIP-81.

The names the layers above use; modules inside this layer import each other directly.
"""

from cursor.ack.ack_state import AckState
from cursor.ack.bitmap import LedgerBitmap
from cursor.ack.bitmap_store import BitmapStore, InMemoryBitmaps, LedgerSwap, SwappingBitmaps
from cursor.ack.dtypes import I64, U8, U64
from cursor.ack.positions import BEFORE_FIRST, LedgerLayout, Position

__all__ = [
    "BEFORE_FIRST",
    "I64",
    "U8",
    "U64",
    "AckState",
    "BitmapStore",
    "InMemoryBitmaps",
    "LedgerBitmap",
    "LedgerLayout",
    "LedgerSwap",
    "Position",
    "SwappingBitmaps",
]
