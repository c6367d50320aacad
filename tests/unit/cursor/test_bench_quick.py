"""The cursor-state benchmark runs (quick mode) and prints the JSON it promises."""

from __future__ import annotations

import json

import pytest

from bench import cursor_state


def test_quick_benchmark_prints_lossless_rows_for_every_encoding_and_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cursor_state.main(["--quick", "--json"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["mode"] == "quick" and result["sizes"] == list(cursor_state.QUICK_SIZES)
    rows = result["results"]
    keys = {
        "ranges",
        "encoding",
        "compression",
        "payload_bytes",
        "bytes_per_range",
        "entries",
        "persist_seconds",
        "recover_seconds",
        "ranges_per_second",
        "lossless",
    }
    assert all(set(row) == keys and row["lossless"] for row in rows)
    combos = {(r["ranges"], r["encoding"], r["compression"]) for r in rows}
    for size in cursor_state.QUICK_SIZES:
        assert (size, cursor_state.BASELINE, "NONE") in combos
        for encoding in ("message-range", "long-list-map"):
            for compression in ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"):
                assert (size, encoding, compression) in combos
    assert set(result["speedup_vs_baseline"]) == {str(s) for s in cursor_state.QUICK_SIZES}
