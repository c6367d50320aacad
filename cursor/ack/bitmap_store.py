"""Where an ack state keeps its per-ledger bitmaps: all in memory, or an LRU cache (PIP-81)."""

from __future__ import annotations

import bisect
from typing import Protocol

from cursor.ack.bitmap import LedgerBitmap


class BitmapStore(Protocol):
    """Per-ledger bitmaps, some of which may live outside memory until asked for."""

    def get(self, ledger_id: int) -> LedgerBitmap | None:
        """The ledger's bitmap (swapped in if needed), or None when it has no acks."""
        ...

    def put(self, ledger_id: int, bitmap: LedgerBitmap) -> None: ...

    def discard(self, ledger_id: int) -> None: ...

    def ledger_ids(self) -> list[int]:
        """Every ledger with acks, ascending, swapped out or not."""
        ...

    def runs_of(self, ledger_id: int) -> int:
        """The ledger's run count without swapping it in."""
        ...

    def touched(self, ledger_id: int) -> None:
        """The ledger's bitmap changed: account for its memory and recency."""
        ...

    def loaded(self, ledger_id: int) -> bool:
        """Whether the ledger's bitmap is in memory now."""
        ...


class InMemoryBitmaps:
    """Every bitmap in a dict; ledger ids kept sorted for ordered encoding."""

    def __init__(self) -> None:
        self._bitmaps: dict[int, LedgerBitmap] = {}
        self._ids: list[int] = []

    def get(self, ledger_id: int) -> LedgerBitmap | None:
        return self._bitmaps.get(ledger_id)

    def put(self, ledger_id: int, bitmap: LedgerBitmap) -> None:
        if ledger_id not in self._bitmaps:
            bisect.insort(self._ids, ledger_id)
        self._bitmaps[ledger_id] = bitmap

    def discard(self, ledger_id: int) -> None:
        if self._bitmaps.pop(ledger_id, None) is not None:
            self._ids.remove(ledger_id)

    def ledger_ids(self) -> list[int]:
        return list(self._ids)

    def runs_of(self, ledger_id: int) -> int:
        bitmap = self._bitmaps.get(ledger_id)
        return 0 if bitmap is None else bitmap.runs

    def touched(self, ledger_id: int) -> None:
        pass

    def loaded(self, ledger_id: int) -> bool:
        return ledger_id in self._bitmaps
