"""The steps `bench.cursor_state` times, each run in a fresh forked child process so that its
peak RSS (ru_maxrss, which only ever grows in a process) is that step's own: the parent
never builds a state, and a child's baseline is the parent's few tens of MB of imports,
reported beside the peak as `rss_before_mb`.

Each step builds what it needs (the state, from a seed) outside the timed section, and times
only the persist or the recover; and, within that time, the time spent inside the ledger
store (SQLite's appends or reads), so that each figure splits into the store's part and
ours.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from cursor import AckState, CursorSettings, Position, RangeEncoding, WireRanges
from cursor.ack import LedgerBitmap
from cursor.persistence import FullStatePersistence, RangeCollector
from cursor.persistence.chunking import find_latest, write
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, PositionInfo

T = TypeVar("T")
MAX_ENTRY_SIZE = 1_048_576  # persistentUnackedRangesMaxEntrySize's default
RUNS_PER_LEDGER = 25_000
BASELINE = "protobuf-per-range"


@dataclass(frozen=True)
class Step:
    db: Path
    ranges: int
    encoding: str  # a RangeEncoding value, or BASELINE
    compression: str
    ledger_id: int = -1  # the ledger to recover from


class TimedLedgers:
    """The ledger store, adding up the time spent inside it."""

    def __init__(self, store: SqliteLedgerStorage) -> None:
        self.store = store
        self.seconds = 0.0

    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int:
        return self._timed(lambda: self.store.create_ledger(custom_metadata))

    def append(self, ledger_id: int, data: bytes) -> int:
        return self._timed(lambda: self.store.append(ledger_id, data))

    def read(self, ledger_id: int, first: int = 0, last: int | None = None) -> list[bytes]:
        return self._timed(lambda: self.store.read(ledger_id, first, last))

    def close_ledger(self, ledger_id: int) -> None:
        self._timed(lambda: self.store.close_ledger(ledger_id))

    def _timed(self, action: Callable[[], T]) -> T:
        value, seconds = timed(action)
        self.seconds += seconds
        return value


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def holes(ranges: int, seed: int = 42) -> AckState:
    """`ranges` runs of 1-3 acked entries separated by 1-3 unacked, 25 000 runs a ledger."""
    rng = np.random.default_rng(seed)
    state = AckState(Position(999, 0))
    for ledger, start in enumerate(range(0, ranges, RUNS_PER_LEDGER), start=1000):
        count = min(RUNS_PER_LEDGER, ranges - start)
        lengths, gaps = rng.integers(1, 4, count), rng.integers(1, 4, count)
        firsts = np.cumsum(gaps) + np.concatenate(([0], np.cumsum(lengths)[:-1]))
        state.merge_bitmap(ledger, LedgerBitmap.from_runs(firsts, firsts + lengths - 1))
    assert state.range_count == ranges
    return state


def same(a: AckState, b: AckState) -> bool:
    if a.range_count != b.range_count or a.ledger_ids() != b.ledger_ids():
        return False
    for ledger_id in a.ledger_ids():
        left, right = a.bitmaps.get(ledger_id), b.bitmaps.get(ledger_id)
        if (
            left is None
            or right is None
            or not np.array_equal(left.java_words(), right.java_words())
        ):
            return False
    return True


def _settings(step: Step) -> CursorSettings:
    return CursorSettings(
        max_unacked_ranges_to_persist=2**31 - 1,
        max_entry_size=MAX_ENTRY_SIZE,
        range_encoding=RangeEncoding(step.encoding),
        compression=CompressionType.Value(step.compression),
    )


def persist(step: Step) -> dict[str, Any]:
    state = holes(step.ranges)
    store = SqliteLedgerStorage(step.db)
    try:
        ledgers = TimedLedgers(store)
        persistence = FullStatePersistence(ledgers, _settings(step))
        persistence.ledger_id = store.create_ledger({})
        before = peak_rss_mb()
        written, seconds = timed(lambda: persistence.flush(state))
        peak = peak_rss_mb()
    finally:
        store.close()
    return {
        "ledger_id": written.ledger_id,
        "payload_bytes": written.report.payload_bytes,
        "entries": written.entries,
        "seconds": seconds,
        "store_seconds": ledgers.seconds,
        "rss_before_mb": before,
        "peak_rss_mb": peak,
    }


def recover(step: Step) -> dict[str, Any]:
    store = SqliteLedgerStorage(step.db)
    try:
        ledgers = TimedLedgers(store)
        persistence = FullStatePersistence(ledgers, _settings(step))
        before = peak_rss_mb()
        recovered, seconds = timed(lambda: persistence.recover(step.ledger_id, None))
        peak = peak_rss_mb()
    finally:
        store.close()
    return {
        "seconds": seconds,
        "store_seconds": ledgers.seconds,
        "rss_before_mb": before,
        "peak_rss_mb": peak,
        "lossless": same(recovered.state, holes(step.ranges)),
    }


def baseline_persist(step: Step) -> dict[str, Any]:
    """One MessageRange message built a range, the same chunked store."""
    state = holes(step.ranges)
    store = SqliteLedgerStorage(step.db)
    ledgers = TimedLedgers(store)
    try:
        before = peak_rss_mb()

        def work() -> tuple[int, int, int]:
            info = PositionInfo(
                ledgerId=state.mark_delete.ledger_id, entryId=state.mark_delete.entry_id
            )
            for ledger_id in state.ledger_ids():
                bitmap = state.bitmaps.get(ledger_id)
                assert bitmap is not None
                firsts, lasts = bitmap.runs_array()
                for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
                    message = info.individualDeletedMessages.add()
                    low, high = message.lowerEndpoint, message.upperEndpoint
                    low.ledgerId, low.entryId = ledger_id, first - 1
                    high.ledgerId, high.entryId = ledger_id, last
            payload = info.SerializeToString()
            ledger_id = store.create_ledger({})
            entries = write(ledgers, ledger_id, payload, MAX_ENTRY_SIZE).entries
            return ledger_id, len(payload), entries

        (ledger_id, size, entries), seconds = timed(work)
        peak = peak_rss_mb()
    finally:
        store.close()
    return {
        "ledger_id": ledger_id,
        "payload_bytes": size,
        "entries": entries,
        "seconds": seconds,
        "store_seconds": ledgers.seconds,
        "rss_before_mb": before,
        "peak_rss_mb": peak,
    }


def baseline_recover(step: Step) -> dict[str, Any]:
    store = SqliteLedgerStorage(step.db)
    ledgers = TimedLedgers(store)
    try:
        before = peak_rss_mb()

        def work() -> AckState:
            found = find_latest(
                ledgers,
                step.ledger_id,
                MAX_ENTRY_SIZE,
                lambda data, _: PositionInfo.FromString(data),
            )
            info = found.value
            columns: list[list[int]] = [[], [], [], []]
            for message in info.individualDeletedMessages:
                low, high = message.lowerEndpoint, message.upperEndpoint
                columns[0].append(low.ledgerId)
                columns[1].append(low.entryId)
                columns[2].append(high.ledgerId)
                columns[3].append(high.entryId)
            recovered = AckState(Position(info.ledgerId, info.entryId))
            ranges = WireRanges(*(np.array(c, np.int64) for c in columns))
            RangeCollector.of(ranges).apply(recovered)
            return recovered

        recovered, seconds = timed(work)
        peak = peak_rss_mb()
    finally:
        store.close()
    return {
        "seconds": seconds,
        "store_seconds": ledgers.seconds,
        "rss_before_mb": before,
        "peak_rss_mb": peak,
        "lossless": same(recovered, holes(step.ranges)),
    }
