"""Persist and recover 1M and 10M individually deleted ranges, chunked (PIP-381) into the
embedded SQLite ledger store, for each range encoding and compression; and the same work
done the plain way, one protobuf MessageRange message a range, as the baseline.

    python -m bench.cursor_state [--quick] [--json]

Every persist and every recover runs in a fresh forked child process, so the peak RSS
reported beside each figure (ru_maxrss) is that step's own, not the high-water mark of
everything before it. Every run is checked lossless: the recovered state has the same
bitmaps as the original. Each time is split into the part spent inside the ledger store
(SQLite's appends or reads) and ours. The targets (10M ranges in the MessageRange form,
uncompressed: persist and recover within a second each) are stated as met or not. With
--json the table goes to stderr and the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.children import in_child
from bench.cursor_state_steps import (
    BASELINE,
    MAX_ENTRY_SIZE,
    Step,
    baseline_persist,
    baseline_recover,
    persist,
    recover,
)
from cursor import RangeEncoding
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType

FULL_SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (10_000, 100_000)
COMPRESSIONS = CompressionType.keys()
TARGET = {"ranges": 10_000_000, "encoding": RangeEncoding.MESSAGE_RANGE.value}
TARGET_SECONDS = 1.0
RSS_METHOD = "peak RSS (ru_maxrss) of a fresh forked child doing only that step"


def row(step: Step) -> dict[str, Any]:
    baseline = step.encoding == BASELINE
    written = in_child(baseline_persist if baseline else persist, step)
    step = Step(step.db, step.ranges, step.encoding, step.compression, written["ledger_id"])
    read = in_child(baseline_recover if baseline else recover, step)
    size, ranges = written["payload_bytes"], step.ranges
    return {
        "ranges": ranges,
        "encoding": step.encoding,
        "compression": step.compression,
        "payload_bytes": size,
        "bytes_per_range": round(size / ranges, 3),
        "entries": written["entries"],
        "persist_seconds": round(written["seconds"], 3),
        "recover_seconds": round(read["seconds"], 3),
        "ranges_per_second": round(ranges / (written["seconds"] + read["seconds"])),
        "persist_store_seconds": round(written["store_seconds"], 3),
        "recover_store_seconds": round(read["store_seconds"], 3),
        "persist_peak_rss_mb": round(written["peak_rss_mb"]),
        "recover_peak_rss_mb": round(read["peak_rss_mb"]),
        "rss_before_mb": round(max(written["rss_before_mb"], read["rss_before_mb"])),
        "lossless": read["lossless"],
    }


def run(sizes: tuple[int, ...], workdir: Path, progress: Console) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    db = workdir / "ledgers.db"
    for size in sizes:
        rows.append(row(Step(db, size, BASELINE, "NONE")))
        progress.log(f"{size:,} ranges, baseline: {_total(rows[-1]):.1f}s")
        for encoding in RangeEncoding:
            for compression in COMPRESSIONS:
                rows.append(row(Step(db, size, encoding.value, compression)))
        progress.log(f"{size:,} ranges, every encoding and compression done")
    return {
        "max_entry_size": MAX_ENTRY_SIZE,
        "sizes": list(sizes),
        "rss": RSS_METHOD,
        "results": rows,
    }


def _total(row: dict[str, Any]) -> float:
    return float(row["persist_seconds"] + row["recover_seconds"])


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target against its row; none in a run without 10M ranges."""
    rows = [
        r
        for r in result["results"]
        if r["ranges"] == TARGET["ranges"]
        and r["encoding"] == TARGET["encoding"]
        and r["compression"] == "NONE"
    ]
    out = []
    for row in rows:
        for step in ("persist", "recover"):
            seconds = row[f"{step}_seconds"]
            out.append(
                {
                    "figure": f"{step}_seconds",
                    **TARGET,
                    "compression": "NONE",
                    "target_seconds": TARGET_SECONDS,
                    "measured_seconds": seconds,
                    "met": seconds <= TARGET_SECONDS,
                    "peak_rss_mb": row[f"{step}_peak_rss_mb"],
                    "of_which_ledger_store_seconds": row[f"{step}_store_seconds"],
                }
            )
    return out


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
        out[str(size)] = round(_total(base) / _total(same_bytes), 2)
    return out


def render(result: dict[str, Any], console: Console) -> None:
    table = Table(title=f"cursor state, chunked at {MAX_ENTRY_SIZE:,} bytes")
    columns: tuple[str, ...] = ("ranges", "encoding", "compression", "MB", "B/range", "entries")
    columns += ("persist s", "store s", "peak MB", "recover s", "store s", "peak MB", "lossless")
    for column in columns:
        left = column in ("encoding", "compression")
        table.add_column(column, justify="left" if left else "right")
    for row in result["results"]:
        table.add_row(
            f"{row['ranges']:,}",
            row["encoding"],
            row["compression"],
            f"{row['payload_bytes'] / 1e6:.2f}",
            f"{row['bytes_per_range']:.2f}",
            str(row["entries"]),
            f"{row['persist_seconds']:.2f}",
            f"{row['persist_store_seconds']:.2f}",
            str(row["persist_peak_rss_mb"]),
            f"{row['recover_seconds']:.2f}",
            f"{row['recover_store_seconds']:.2f}",
            str(row["recover_peak_rss_mb"]),
            "yes" if row["lossless"] else "NO",
        )
    console.print(table)
    console.print(f"store s: of that, inside the ledger store (SQLite); peak MB: {result['rss']}")
    for size, factor in result["speedup_vs_baseline"].items():
        console.print(
            f"{int(size):,} ranges: message-range/NONE persist+recover is {factor}x the baseline"
        )
    for target in result["targets"]:
        console.print(
            f"target: {target['ranges']:,} ranges {target['encoding']}/NONE "
            f"{target['figure']} {target['measured_seconds']:.2f} s <= {TARGET_SECONDS} s: "
            f"{'met' if target['met'] else 'NOT met'} (of which the ledger store "
            f"{target['of_which_ledger_store_seconds']:.2f} s; peak RSS {target['peak_rss_mb']} MB)"
        )
    if not result["targets"]:
        console.print("targets: for 10M ranges, so only in the full run")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cursor_state", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="10k and 100k ranges: a smoke test")
    parser.add_argument("--json", action="store_true", help="end with one JSON object")
    args = parser.parse_args(argv)
    console = Console(stderr=args.json, width=150, soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="cursor-bench-") as workdir:
        result = run(QUICK_SIZES if args.quick else FULL_SIZES, Path(workdir), console)
    result["mode"] = "quick" if args.quick else "full"
    result["speedup_vs_baseline"] = speedups(result)
    result["targets"] = targets(result)
    render(result, console)
    if args.json:
        print(json.dumps(result), flush=True)
    if not all(row["lossless"] for row in result["results"]):
        sys.exit(1)
    return result


if __name__ == "__main__":
    main()
