"""From an ack state to what is persisted, with Pulsar's caps, and back.

The caps are Pulsar's (ManagedCursorImpl and OpenLongPairRangeSet.toRanges):
- MessageRange form: the first `managedLedgerMaxUnackedRangesToPersist` ranges in position
  order. (Pulsar 3.x/4.0 keep one more through an off-by-one in their loop; 2.x and the
  current code keep exactly the cap, which is what is done here.)
- LongListMap form: whole ledgers in ledger order while the running count of acknowledged
  entries (bit cardinality, not ranges) stays within the cap; when not even the first ledger
  fits, Pulsar falls back to the MessageRange form, and so does this.
- Batch-index info: the first `maxBatchDeletedIndexToPersist` (10000) batches.
What is cut is only tracked in memory and is reported, so the caller can warn or pause.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cursor.ack import AckState, BitmapStore, LedgerBitmap, LedgerLayout
from cursor.persistence.range_collector import RangeCollector
from cursor.wire import BatchIndexes, LedgerBits, PositionInfoContent, RangeEncoding, WireRanges

MAX_BATCH_DELETED_INDEX_TO_PERSIST = 10_000


@dataclass(frozen=True)
class PersistReport:
    """What one persisted state holds compared with the state in memory."""

    encoding: RangeEncoding
    ranges_total: int
    ranges_persisted: int
    batches_total: int = 0
    batches_persisted: int = 0
    payload_bytes: int = 0
    entries_written: int = 0

    @property
    def truncated(self) -> bool:
        return (
            self.ranges_persisted < self.ranges_total or self.batches_persisted < self.batches_total
        )


def capture(
    state: AckState,
    encoding: RangeEncoding,
    max_ranges: int,
    max_batches: int = MAX_BATCH_DELETED_INDEX_TO_PERSIST,
) -> tuple[PositionInfoContent, PersistReport]:
    """The PositionInfo content for `state`, capped."""
    ledger_ids = state.ledger_ids()
    total = state.range_count
    bitsets: tuple[LedgerBits, ...] = ()
    ranges = WireRanges()
    persisted = 0
    if encoding is RangeEncoding.LONG_LIST_MAP:
        bitsets, persisted = _bitsets_within(state.bitmaps, ledger_ids, max_ranges)
        if not bitsets:
            encoding = RangeEncoding.MESSAGE_RANGE  # Pulsar's fallback
    if encoding is RangeEncoding.MESSAGE_RANGE:
        ranges = _ranges_within(state.bitmaps, ledger_ids, max_ranges)
        persisted = len(ranges)
    batches, batches_total = capped_batches(state, max_batches)
    content = PositionInfoContent(
        mark_delete=state.mark_delete,
        ranges=ranges,
        bitsets=bitsets,
        batch_indexes=batches,
        properties=dict(state.properties),
    )
    report = PersistReport(
        encoding=encoding,
        ranges_total=total,
        ranges_persisted=persisted,
        batches_total=batches_total,
        batches_persisted=len(batches),
    )
    return content, report


def capped_batches(state: AckState, max_batches: int) -> tuple[tuple[BatchIndexes, ...], int]:
    """The batch-index info to persist (none with batch-index acks off) and how many exist."""
    if not state.batch_index_level:
        return (), 0
    batches = state.batch_indexes()
    kept = list(batches.items())[:max_batches]
    return tuple(BatchIndexes.of_mask(p, unacked) for p, unacked in kept), len(batches)


def _ranges_within(bitmaps: BitmapStore, ledger_ids: list[int], cap: int) -> WireRanges:
    """The first `cap` runs, written straight into columns sized from the run counts the
    store keeps (no per-ledger arrays to concatenate: at 10M ranges those copies cost more
    than finding the runs). Both endpoints share one ledger column."""
    total = min(cap, sum(bitmaps.runs_of(ledger_id) for ledger_id in ledger_ids))
    ledgers = np.empty(total, np.int64)
    lower = np.empty(total, np.int64)
    upper = np.empty(total, np.int64)
    filled = 0
    for ledger_id in ledger_ids:
        if filled >= total:
            break
        bitmap = bitmaps.get(ledger_id)
        if bitmap is None:
            continue
        firsts, lasts = bitmap.runs_array()
        count = min(firsts.size, total - filled)
        if firsts.size != bitmaps.runs_of(ledger_id):
            return _ranges_concatenated(bitmaps, ledger_ids, cap)  # a count out of step
        ledgers[filled : filled + count] = ledger_id
        np.subtract(firsts[:count], 1, out=lower[filled : filled + count])
        upper[filled : filled + count] = lasts[:count]
        filled += count
    if filled < total:
        return _ranges_concatenated(bitmaps, ledger_ids, cap)
    return WireRanges(ledgers, lower, ledgers, upper)


def _ranges_concatenated(bitmaps: BitmapStore, ledger_ids: list[int], cap: int) -> WireRanges:
    parts: list[WireRanges] = []
    left = cap
    for ledger_id in ledger_ids:
        bitmap = bitmaps.get(ledger_id)
        if left <= 0:
            break
        if bitmap is None:
            continue
        firsts, lasts = bitmap.runs_array()
        firsts, lasts = firsts[:left], lasts[:left]
        parts.append(WireRanges.of_runs(np.full(firsts.size, ledger_id), firsts, lasts))
        left -= firsts.size
    return WireRanges.concat(parts)


def _bitsets_within(
    bitmaps: BitmapStore, ledger_ids: list[int], cap: int
) -> tuple[tuple[LedgerBits, ...], int]:
    bitsets: list[LedgerBits] = []
    acked = runs = 0
    for ledger_id in ledger_ids:
        bitmap = bitmaps.get(ledger_id)
        if bitmap is None:
            continue
        acked += bitmap.cardinality()
        if acked > cap:
            break
        bitsets.append(LedgerBits(ledger_id, bitmap.java_words()))
        runs += bitmap.runs
    return tuple(bitsets), runs


def restore(
    content: PositionInfoContent,
    *,
    batch_index_level: bool = False,
    layout: LedgerLayout | None = None,
    bitmaps: BitmapStore | None = None,
    collected: RangeCollector | None = None,
) -> AckState:
    """An ack state holding what `content` says is acknowledged; its ranges, or those
    `collected` while it was decoded piece by piece."""
    state = AckState(
        content.mark_delete,
        batch_index_level=batch_index_level,
        layout=layout,
        bitmaps=bitmaps,
        properties=content.properties,
    )
    (RangeCollector.of(content.ranges) if collected is None else collected).apply(state)
    for bits in content.bitsets:
        state.merge_bitmap(bits.ledger_id, LedgerBitmap.from_words(bits.words))
    for batch in content.batch_indexes:
        state.restore_batch(batch.position, batch.mask)
    state.take_dirty()
    return state
