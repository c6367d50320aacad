"""From MessageRanges to per-ledger bitmaps, a batch at a time, then into an ack state.

A range crossing ledgers ((L1:e1, L2:e2], written by Pulsar's non-open range set) is
expanded with the ledger layout when there is one. Without it only its part in L2 is
taken: where L1 ends is unknown, and counting too little as acknowledged is the safe side
(a redelivery, never a lost message).

Ranges come in position order from every writer, so each ledger's ranges are one slice of a
batch: the work is done slice by slice, on arrays that stay in cache, and nothing is sorted
(a batch in any other order is sorted by ledger first). Ranges are collected before
anything is acknowledged, so a bad range leaves no state half-built, and a recovery can feed
the ranges in as it decodes them, without ever holding all of them.
"""

from __future__ import annotations

import numpy as np

from core.errors import DecodeError
from cursor.ack import I64, AckState, LedgerBitmap, Position
from cursor.wire import WireRanges


def apply_ranges(state: AckState, ranges: WireRanges) -> None:
    """Acknowledge what MessageRanges cover."""
    RangeCollector.of(ranges).apply(state)


class RangeCollector:
    def __init__(self) -> None:
        self._bitmaps: dict[int, LedgerBitmap] = {}
        self._crossing: list[WireRanges] = []
        self._error: DecodeError | None = None

    @classmethod
    def of(cls, ranges: WireRanges) -> RangeCollector:
        collector = cls()
        collector.add(ranges)
        return collector

    def add(self, ranges: WireRanges) -> None:
        """Take a batch of ranges. A range no writer could have written is reported by
        `apply` (which is where a whole decoded state used to be checked), not here."""
        if self._error is not None:
            return
        bounds = _ledger_slices(ranges.lower_ledger)
        if bounds is None:
            order = np.argsort(ranges.lower_ledger, kind="stable")
            ranges = WireRanges(*(getattr(ranges, name)[order] for name in _COLUMNS))
            bounds = _ledger_slices(ranges.lower_ledger)
            assert bounds is not None
        try:
            for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
                self._add_ledger(ranges, start, stop)
        except DecodeError as exc:
            self._error = exc
            self._bitmaps.clear()
            self._crossing.clear()

    def apply(self, state: AckState) -> None:
        """Acknowledge everything collected: ledger by ledger, then the crossing ranges;
        nothing at all, and DecodeError, when a range was invalid."""
        if self._error is not None:
            raise self._error
        for ledger_id in sorted(self._bitmaps):
            state.merge_bitmap(ledger_id, self._bitmaps[ledger_id])
        for ranges in self._crossing:
            for index in range(len(ranges)):
                _apply_crossing(state, ranges, index)

    def _add_ledger(self, ranges: WireRanges, start: int, stop: int) -> None:
        ledger_id = int(ranges.lower_ledger[start])
        firsts = ranges.lower_entry[start:stop] + 1
        lasts = ranges.upper_entry[start:stop]
        same = ranges.upper_ledger[start:stop] == ledger_id
        if not same.all():
            crossing = np.flatnonzero(~same) + start
            self._crossing.append(WireRanges(*(getattr(ranges, n)[crossing] for n in _COLUMNS)))
            firsts, lasts = firsts[same], lasts[same]
        keep = lasts >= firsts
        if not keep.all():
            firsts, lasts = firsts[keep], lasts[keep]
        if firsts.size == 0:
            return
        lowest = int(firsts.min())
        if lowest < 0:
            raise DecodeError(f"a range starts before entry 0 (lower endpoint {lowest - 1})")
        bitmap = LedgerBitmap.from_runs(firsts, lasts)
        held = self._bitmaps.get(ledger_id)
        if held is None:
            self._bitmaps[ledger_id] = bitmap
        else:
            held.merge(bitmap)


_COLUMNS = ("lower_ledger", "lower_entry", "upper_ledger", "upper_entry")


def _ledger_slices(ledgers: I64) -> I64 | None:
    """Where each ledger's slice starts (and the end), or None when a ledger comes back."""
    if ledgers.size == 0:
        return np.zeros(1, np.int64)
    bounds = np.flatnonzero(ledgers[1:] != ledgers[:-1]) + 1
    if bounds.size and bool(np.any(ledgers[bounds] < ledgers[bounds - 1])):
        return None
    return np.concatenate(([0], bounds, [ledgers.size])).astype(np.int64)


def _apply_crossing(state: AckState, ranges: WireRanges, index: int) -> None:
    low = Position(int(ranges.lower_ledger[index]), int(ranges.lower_entry[index]))
    high = Position(int(ranges.upper_ledger[index]), int(ranges.upper_entry[index]))
    if high <= low:
        return
    layout = state.layout
    if layout is not None:
        last = layout.last_entry(low.ledger_id)
        if last is not None and last > low.entry_id:
            state.ack_range(low.ledger_id, low.entry_id + 1, last)
        for ledger_id in layout.ledgers_between(low.ledger_id, high.ledger_id):
            end = layout.last_entry(ledger_id)
            if end is not None and end >= 0:
                state.ack_range(ledger_id, 0, end)
    if high.entry_id >= 0:
        state.ack_range(high.ledger_id, 0, high.entry_id)
