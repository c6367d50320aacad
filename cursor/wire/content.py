"""What a PositionInfo or ManagedCursorInfo carries, decoded but not yet interpreted.

Ranges stay column-wise numpy arrays exactly as on the wire: `MessageRange` is open-closed,
(lower ledger:lower entry] .. (upper ledger:upper entry], so acknowledging entries 3..5 of
ledger 7 is the range (7:2, 7:5]. Bit sets stay Java `BitSet` words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from cursor.ack import I64, U64, Position

_WORD_MASK = (1 << 64) - 1


class RangeEncoding(str, Enum):
    """How individually deleted messages are written: PositionInfo field 3 or field 6."""

    MESSAGE_RANGE = "message-range"
    LONG_LIST_MAP = "long-list-map"


def _empty() -> I64:
    return np.zeros(0, np.int64)


@dataclass(frozen=True, eq=False)
class WireRanges:
    """MessageRange values, one array per field."""

    lower_ledger: I64 = field(default_factory=_empty)
    lower_entry: I64 = field(default_factory=_empty)
    upper_ledger: I64 = field(default_factory=_empty)
    upper_entry: I64 = field(default_factory=_empty)

    def __len__(self) -> int:
        return int(self.lower_ledger.size)

    @classmethod
    def of_runs(cls, ledger: I64, firsts: I64, lasts: I64) -> WireRanges:
        """From closed runs of acked entries [first, last] inside one ledger each."""
        return cls(ledger, firsts - 1, ledger, lasts)

    @classmethod
    def concat(cls, parts: Sequence[WireRanges]) -> WireRanges:
        if not parts:
            return cls()
        if len(parts) == 1:
            return parts[0]
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in _COLUMNS))

    def same_as(self, other: WireRanges) -> bool:
        return all(np.array_equal(getattr(self, n), getattr(other, n)) for n in _COLUMNS)


_COLUMNS = ("lower_ledger", "lower_entry", "upper_ledger", "upper_entry")


@dataclass(frozen=True, eq=False)
class LedgerBits:
    """One LongListMap: a ledger and its acked entries as Java BitSet words."""

    ledger_id: int
    words: U64


@dataclass(frozen=True)
class BatchIndexes:
    """One BatchedEntryDeletionIndexInfo: a set bit in `delete_set` is an index still unacked."""

    position: Position
    delete_set: tuple[int, ...]  # Java longs, signed

    @classmethod
    def of_mask(cls, position: Position, unacked: int) -> BatchIndexes:
        words = [
            (unacked >> (64 * i)) & _WORD_MASK for i in range((unacked.bit_length() + 63) // 64)
        ]
        return cls(position, tuple(w - (1 << 64) if w >> 63 else w for w in words))

    @property
    def mask(self) -> int:
        return sum((word & _WORD_MASK) << (64 * i) for i, word in enumerate(self.delete_set))


@dataclass(frozen=True, eq=False)
class PositionInfoContent:
    mark_delete: Position
    ranges: WireRanges = field(default_factory=WireRanges)
    bitsets: tuple[LedgerBits, ...] = ()
    batch_indexes: tuple[BatchIndexes, ...] = ()
    properties: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class CursorInfoContent:
    cursors_ledger_id: int
    mark_delete: Position | None = None
    ranges: WireRanges = field(default_factory=WireRanges)
    properties: Mapping[str, int] = field(default_factory=dict)
    last_active: int | None = None
    batch_indexes: tuple[BatchIndexes, ...] = ()
    cursor_properties: Mapping[str, str] = field(default_factory=dict)
