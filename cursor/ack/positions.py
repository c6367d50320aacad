"""Positions in a managed ledger and, optionally, where its ledgers end.

A position is (ledger id, entry id), ordered as Pulsar orders them. Knowing where ledgers end
lets the mark-delete position fold across a ledger boundary, as Pulsar's
`getNextValidPosition` does; without it folding stays inside one ledger, which is safe (a
message is never taken for acknowledged) but may keep one extra range.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import NamedTuple


class Position(NamedTuple):
    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"


# Where a new cursor starts when nothing says otherwise: before the first entry.
BEFORE_FIRST = Position(0, -1)


class LedgerLayout:
    """The managed ledger's ledgers, in order, with the last entry of each closed one."""

    def __init__(self, ledgers: Iterable[tuple[int, int | None]]) -> None:
        ordered = sorted(ledgers)
        self._ids = [ledger_id for ledger_id, _ in ordered]
        self._last = dict(ordered)

    def last_entry(self, ledger_id: int) -> int | None:
        """The last entry of a closed ledger; None when open or unknown."""
        return self._last.get(ledger_id)

    def next_position(self, position: Position) -> Position:
        last = self._last.get(position.ledger_id)
        if last is None or position.entry_id < last:
            return Position(position.ledger_id, position.entry_id + 1)
        index = bisect.bisect_right(self._ids, position.ledger_id)
        if index == len(self._ids):
            return Position(position.ledger_id, position.entry_id + 1)
        return Position(self._ids[index], 0)

    def ledgers_between(self, low: int, high: int) -> list[int]:
        """Ledgers strictly between two ledger ids."""
        start = bisect.bisect_right(self._ids, low)
        stop = bisect.bisect_left(self._ids, high)
        return self._ids[start:stop]
