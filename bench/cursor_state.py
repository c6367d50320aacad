"""Persist and recover 1M and 10M individually deleted ranges, chunked (PIP-381) into the
embedded SQLite ledger store, for each range encoding and compression; and the same work
done the plain way, one protobuf MessageRange message a range, as the baseline.

    python -m bench.cursor_state [--quick] [--json]

Every run is checked lossless: the recovered state has the same bitmaps as the original.
With --json the table goes to stderr and the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from rich.console import Console
from rich.table import Table

from cursor import AckState, CursorSettings, Position, RangeEncoding, WireRanges
from cursor.ack import LedgerBitmap
from cursor.persistence import FullStatePersistence, apply_ranges
from cursor.persistence.chunking import find_latest, write
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, PositionInfo

T = TypeVar("T")
FULL_SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (10_000, 100_000)
MAX_ENTRY_SIZE = 1_048_576  # persistentUnackedRangesMaxEntrySize's default
RUNS_PER_LEDGER = 25_000
BASELINE = "protobuf-per-range"
COMPRESSIONS = CompressionType.keys()


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


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


def ours(
    store: SqliteLedgerStorage, state: AckState, encoding: RangeEncoding, compression: str
) -> dict[str, Any]:
    settings = CursorSettings(
        max_unacked_ranges_to_persist=2**31 - 1,
        max_entry_size=MAX_ENTRY_SIZE,
        range_encoding=encoding,
        compression=CompressionType.Value(compression),
    )
    persistence = FullStatePersistence(store, settings)
    persistence.ledger_id = store.create_ledger({})
    written, persist_seconds = timed(lambda: persistence.flush(state))
    recovered, recover_seconds = timed(lambda: persistence.recover(written.ledger_id, None))
    return _row(
        state,
        encoding.value,
        compression,
        written.report.payload_bytes,
        written.entries,
        persist_seconds,
        recover_seconds,
        same(recovered.state, state),
    )


def baseline(store: SqliteLedgerStorage, state: AckState) -> dict[str, Any]:
    """One MessageRange message built and read back a range, the same chunked store."""

    def persist() -> tuple[int, int, int]:
        info = PositionInfo(
            ledgerId=state.mark_delete.ledger_id, entryId=state.mark_delete.entry_id
        )
        for ledger_id in state.ledger_ids():
            bitmap = state.bitmaps.get(ledger_id)
            assert bitmap is not None
            firsts, lasts = bitmap.runs_array()
            for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
                message = info.individualDeletedMessages.add()
                message.lowerEndpoint.ledgerId, message.lowerEndpoint.entryId = ledger_id, first - 1
                message.upperEndpoint.ledgerId, message.upperEndpoint.entryId = ledger_id, last
        payload = info.SerializeToString()
        ledger_id = store.create_ledger({})
        return ledger_id, len(payload), write(store, ledger_id, payload, MAX_ENTRY_SIZE).entries

    def recover(ledger_id: int) -> AckState:
        found = find_latest(
            store, ledger_id, MAX_ENTRY_SIZE, lambda data, _: PositionInfo.FromString(data)
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
        apply_ranges(recovered, WireRanges(*(np.array(c, np.int64) for c in columns)))
        return recovered

    (ledger_id, size, entries), persist_seconds = timed(persist)
    recovered, recover_seconds = timed(lambda: recover(ledger_id))
    return _row(
        state,
        BASELINE,
        "NONE",
        size,
        entries,
        persist_seconds,
        recover_seconds,
        same(recovered, state),
    )


def _row(
    state: AckState,
    encoding: str,
    compression: str,
    size: int,
    entries: int,
    persist_seconds: float,
    recover_seconds: float,
    lossless: bool,
) -> dict[str, Any]:
    ranges = state.range_count
    return {
        "ranges": ranges,
        "encoding": encoding,
        "compression": compression,
        "payload_bytes": size,
        "bytes_per_range": round(size / ranges, 3),
        "entries": entries,
        "persist_seconds": round(persist_seconds, 3),
        "recover_seconds": round(recover_seconds, 3),
        "ranges_per_second": round(ranges / (persist_seconds + recover_seconds)),
        "lossless": lossless,
    }


def run(sizes: tuple[int, ...], workdir: Path, progress: Console) -> dict[str, Any]:
    store = SqliteLedgerStorage(workdir / "ledgers.db")
    rows: list[dict[str, Any]] = []
    try:
        for size in sizes:
            state, seconds = timed(lambda size=size: holes(size))  # type: ignore[misc]
            progress.log(f"{size:,} ranges built in {seconds:.1f}s")
            rows.append(baseline(store, state))
            progress.log(
                f"baseline: {rows[-1]['persist_seconds'] + rows[-1]['recover_seconds']:.1f}s"
            )
            for encoding in RangeEncoding:
                for compression in COMPRESSIONS:
                    rows.append(ours(store, state, encoding, compression))
            del state
    finally:
        store.close()
    return {"max_entry_size": MAX_ENTRY_SIZE, "sizes": list(sizes), "results": rows}


def speedups(result: dict[str, Any]) -> dict[str, float]:
    """Baseline time over ours, MessageRange uncompressed (the same bytes), per size."""
    out = {}
    for size in result["sizes"]:
        rows = [r for r in result["results"] if r["ranges"] == size]
        base = next(r for r in rows if r["encoding"] == BASELINE)
        same_bytes = next(
            r
            for r in rows
            if r["encoding"] == RangeEncoding.MESSAGE_RANGE.value and r["compression"] == "NONE"
        )
        total = same_bytes["persist_seconds"] + same_bytes["recover_seconds"]
        out[str(size)] = round((base["persist_seconds"] + base["recover_seconds"]) / total, 2)
    return out


def render(result: dict[str, Any], console: Console) -> None:
    table = Table(title=f"cursor state, chunked at {MAX_ENTRY_SIZE:,} bytes")
    for column in (
        "ranges",
        "encoding",
        "compression",
        "MB",
        "B/range",
        "entries",
        "persist s",
        "recover s",
        "lossless",
    ):
        table.add_column(
            column, justify="left" if column in ("encoding", "compression") else "right"
        )
    for row in result["results"]:
        table.add_row(
            f"{row['ranges']:,}",
            row["encoding"],
            row["compression"],
            f"{row['payload_bytes'] / 1e6:.2f}",
            f"{row['bytes_per_range']:.2f}",
            str(row["entries"]),
            f"{row['persist_seconds']:.2f}",
            f"{row['recover_seconds']:.2f}",
            "yes" if row["lossless"] else "NO",
        )
    console.print(table)
    for size, factor in result["speedup_vs_baseline"].items():
        console.print(
            f"{int(size):,} ranges: message-range/NONE persist+recover is {factor}x the baseline"
        )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cursor_state", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="10k and 100k ranges: a smoke test")
    parser.add_argument("--json", action="store_true", help="end with one JSON object")
    args = parser.parse_args(argv)
    console = Console(stderr=args.json, width=130)
    with tempfile.TemporaryDirectory(prefix="cursor-bench-") as workdir:
        result = run(QUICK_SIZES if args.quick else FULL_SIZES, Path(workdir), console)
    result["mode"] = "quick" if args.quick else "full"
    result["speedup_vs_baseline"] = speedups(result)
    render(result, console)
    if args.json:
        print(json.dumps(result), flush=True)
    if not all(row["lossless"] for row in result["results"]):
        sys.exit(1)
    return result


if __name__ == "__main__":
    main()
