"""Where an ack state keeps its per-ledger bitmaps: all in memory, or PIP-81's LRU.

The LRU holds at most `maxIndividualAckCacheBytesPerCursor` of bitmaps in memory. Every
ledger with acks is known (id and range count); only the recently used ones are loaded.
Asking for one that is not swaps it in from its ledger entry, evicting the least recently
used until the budget holds again, and always keeping the one just asked for. An evicted
bitmap that changed since it was last written is written first, so nothing is lost (it
becomes durable at the next marker, like any other change).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
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


class LedgerSwap(Protocol):
    """Where the LRU reads bitmaps from and writes evicted ones to (the cursor ledger)."""

    def load(self, ledger_id: int) -> LedgerBitmap:
        """Read the ledger's bitmap from its latest entry."""
        ...

    def save(self, ledger_id: int, bitmap: LedgerBitmap) -> None:
        """Write the ledger's bitmap to a new entry (before it leaves memory)."""
        ...


class SwappingBitmaps:
    """PIP-81's LRU: the bitmaps of recently used ledgers in memory, the others in entries."""

    def __init__(self, budget_bytes: int, swap: LedgerSwap) -> None:
        self._budget = budget_bytes
        self._swap = swap
        self._loaded: OrderedDict[int, LedgerBitmap] = OrderedDict()  # oldest use first
        self._sizes: dict[int, int] = {}
        self._used_bytes = 0
        self._runs: dict[int, int] = {}
        self._ids: list[int] = []
        self._unsaved: set[int] = set()
        self.swaps_in = self.swaps_out = 0

    # -- BitmapStore ---------------------------------------------------------------------

    def get(self, ledger_id: int) -> LedgerBitmap | None:
        bitmap = self._loaded.get(ledger_id)
        if bitmap is not None:
            self._loaded.move_to_end(ledger_id)
            return bitmap
        if ledger_id not in self._runs:
            return None
        bitmap = self._swap.load(ledger_id)
        self.swaps_in += 1
        self._hold(ledger_id, bitmap)
        return bitmap

    def put(self, ledger_id: int, bitmap: LedgerBitmap) -> None:
        if ledger_id not in self._runs:
            bisect.insort(self._ids, ledger_id)
        self._runs[ledger_id] = bitmap.runs
        self._unsaved.add(ledger_id)
        self._hold(ledger_id, bitmap)

    def discard(self, ledger_id: int) -> None:
        if self._runs.pop(ledger_id, None) is None:
            return
        self._ids.remove(ledger_id)
        self._unsaved.discard(ledger_id)
        if self._loaded.pop(ledger_id, None) is not None:
            self._used_bytes -= self._sizes.pop(ledger_id)

    def ledger_ids(self) -> list[int]:
        return list(self._ids)

    def runs_of(self, ledger_id: int) -> int:
        return self._runs.get(ledger_id, 0)

    def touched(self, ledger_id: int) -> None:
        bitmap = self._loaded[ledger_id]
        self._runs[ledger_id] = bitmap.runs
        self._unsaved.add(ledger_id)
        self._hold(ledger_id, bitmap)

    def loaded(self, ledger_id: int) -> bool:
        return ledger_id in self._loaded

    # -- recovery and flushing -----------------------------------------------------------

    def register(self, ledger_id: int, runs: int) -> None:
        """A ledger known from the marker, left on disk until asked for."""
        if ledger_id not in self._runs:
            bisect.insort(self._ids, ledger_id)
        self._runs[ledger_id] = runs

    def install(self, ledger_id: int, bitmap: LedgerBitmap, changed: bool = False) -> bool:
        """Load a registered ledger at recovery; False, and not loaded, when it does not fit.

        `changed` loads it whatever the budget, as differing from its entry.
        """
        if not changed and self._used_bytes + bitmap.nbytes > self._budget:
            return False
        self._runs[ledger_id] = bitmap.runs
        if changed:
            self._unsaved.add(ledger_id)
        self._hold(ledger_id, bitmap)
        return True

    def saved(self, ledger_id: int) -> None:
        """The ledger's current bitmap is in an entry now."""
        self._unsaved.discard(ledger_id)

    def unsaved(self, ledger_id: int) -> bool:
        return ledger_id in self._unsaved

    @property
    def used_bytes(self) -> int:
        return self._used_bytes

    # -- internals -----------------------------------------------------------------------

    def _hold(self, ledger_id: int, bitmap: LedgerBitmap) -> None:
        self._used_bytes += bitmap.nbytes - self._sizes.get(ledger_id, 0)
        self._sizes[ledger_id] = bitmap.nbytes
        self._loaded[ledger_id] = bitmap
        self._loaded.move_to_end(ledger_id)
        while self._used_bytes > self._budget and len(self._loaded) > 1:
            oldest, evicted = next(iter(self._loaded.items()))
            if oldest in self._unsaved:
                self._swap.save(oldest, evicted)
                self._unsaved.discard(oldest)
            del self._loaded[oldest]
            self._used_bytes -= self._sizes.pop(oldest)
            self.swaps_out += 1
