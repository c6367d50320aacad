"""The cursor-state benchmark runs (quick mode) and prints the JSON it promises."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import cursor_state
from bench.cursor_state_steps import BASELINE

KEYS = {
    "ranges",
    "encoding",
    "compression",
    "payload_bytes",
    "bytes_per_range",
    "entries",
    "persist_seconds",
    "recover_seconds",
    "ranges_per_second",
    "persist_store_seconds",
    "recover_store_seconds",
    "persist_peak_rss_mb",
    "recover_peak_rss_mb",
    "rss_before_mb",
    "lossless",
}


def test_quick_benchmark_prints_lossless_rows_for_every_encoding_and_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cursor_state.main(["--quick", "--json"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["mode"] == "quick" and result["sizes"] == list(cursor_state.QUICK_SIZES)
    assert "fresh forked child" in result["rss"]
    rows = result["results"]
    for row in rows:
        assert set(row) == KEYS and row["lossless"]
        assert row["persist_store_seconds"] <= row["persist_seconds"]
        assert row["recover_store_seconds"] <= row["recover_seconds"]
        # Each step's own peak: at least what the child started with, and finite.
        assert 0 < row["rss_before_mb"] <= max(row["persist_peak_rss_mb"], 1 << 20)
    assert sum(row["persist_store_seconds"] for row in rows) > 0  # the appends were timed
    combos = {(r["ranges"], r["encoding"], r["compression"]) for r in rows}
    for size in cursor_state.QUICK_SIZES:
        assert (size, BASELINE, "NONE") in combos
        for encoding in ("message-range", "long-list-map"):
            for compression in ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"):
                assert (size, encoding, compression) in combos
    assert set(result["speedup_vs_baseline"]) == {str(s) for s in cursor_state.QUICK_SIZES}
    assert result["targets"] == []  # the targets are for 10M ranges: the full run


def test_targets_are_judged_against_the_10m_message_range_row() -> None:
    row: dict[str, Any] = {
        "ranges": 10_000_000,
        "encoding": "message-range",
        "compression": "NONE",
        "persist_seconds": 1.2,
        "recover_seconds": 0.8,
        "persist_peak_rss_mb": 60,
        "recover_peak_rss_mb": 61,
        "persist_store_seconds": 0.7,
        "recover_store_seconds": 0.1,
    }
    judged = cursor_state.targets({"results": [row, {**row, "compression": "LZ4"}]})
    assert [(t["figure"], t["met"]) for t in judged] == [
        ("persist_seconds", False),
        ("recover_seconds", True),
    ]
    assert judged[0]["of_which_ledger_store_seconds"] == 0.7 and judged[1]["peak_rss_mb"] == 61
