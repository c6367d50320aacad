"""Every phase-two bench runs with --quick and ends with one JSON object of the right shape."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.reliability.support import REPO

SHAPES: dict[str, dict[str, type | tuple[type, ...]]] = {
    "worker_throughput": {
        "count": int,
        "parallelism": int,
        "batch_size": int,
        "worker_per_second": float,
        "worker_one_at_a_time_per_second": float,
        "worker_receive_only_per_second": float,
        "worker_receive_only_ratio_to_raw_whole_work": float,
        "worker_outcomes": dict,
        "correct": bool,
        "raw_kazoo_delete_per_second": float,
        "raw_kazoo_read_delete_pairs_pipelined_per_second": float,
        "raw_kazoo_read_delete_pairs_multi_per_second": float,
        "raw_kazoo_read_delete_pairs_multiread_per_second": float,
        "limit_per_second": float,
        "ratio_per_round": list,
        "figures": dict,
        "peak_rss_mb": float,
        "raw_kazoo_delete_threads_per_second": float,
        "raw_kazoo_delete_pipelined_per_second": float,
        "raw_broker_consume_ack_per_second": float,
        "raw_whole_work_per_second": float,
        "ratio_to_raw_whole_work": float,
        "worker_cpu_us_per_message": float,
        "worker_process_cores": float,
        "worker_machine_busy_cores": float,
        "raw_whole_work_cpu_us_per_message": float,
        "raw_whole_work_machine_busy_cores": float,
        "machine_cores": float,
        "worker_logged_per_second": float,
        "worker_logged_ratio_to_slower_raw": float,
        "worker_logged_deletions_in_summaries": int,
        "sidecars": int,
        "sidecars_per_second": float,
        "sidecars_handled_by_each": list,
        "sidecars_ratio_to_slower_raw": float,
        "worker_machine_cpu_us_per_message": float,
        "worker_all_cores_bound_per_second": float,
        "worker_all_cores_bound_ratio": float,
        "slower_raw_per_second": float,
        "ratio_to_slower_raw": float,
        "target_met": bool,
    },
    "in_use_lookups": {
        "messages": int,
        "topics": int,
        "ttl_seconds": int,
        "fetches_per_topic_max": int,
        "fetches_total": int,
        "metadata_reads": int,
        "metadata_reads_without_cache": int,
        "uncached_fetches_per_message": float,
        "target_met": bool,
        "correct": bool,
    },
    "phase_one_delay": {
        "before_max_waited_seconds": float,
        "before_max_reconsumes": int,
        "now_max_waited_seconds": float,
        "now_max_reconsumes": int,
        "cases": list,
        "summary": dict,
    },
    "latency": {
        "messages": int,
        "deleted": int,
        "delay_seconds": int,
        "latency_seconds": dict,
        "overhead_seconds": dict,
        "early": int,
        "raw_broker_round_trip_seconds": dict,
    },
}


@pytest.mark.parametrize("bench", sorted(SHAPES))
def test_bench_quick_json(bench: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"bench.{bench}", "--quick", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout[-2000:]  # the table went to stderr
    figures = json.loads(lines[0])
    assert figures["bench"] == bench
    for key, kind in SHAPES[bench].items():
        assert isinstance(figures[key], kind), (key, figures[key])
    assert "┃" in result.stderr  # and the table was printed
    if bench == "worker_throughput":
        assert figures["correct"] and figures["worker_outcomes"]["deleted"] == figures["count"]
        assert all(figure["peak_rss_mb"] > 0 for figure in figures["figures"].values())
        receive_only = figures["figures"]["worker_receive_only"]["outcomes"]
        assert receive_only["deleted"] == figures["count"]
        share = figures["worker_receive_only_per_second"] / figures["raw_whole_work_per_second"]
        assert figures["worker_receive_only_ratio_to_raw_whole_work"] == share
        assert sum(figures["sidecars_handled_by_each"]) == figures["count"]
        # Every deletion is counted in the default log's `worked` lines, the last one's too.
        assert figures["worker_logged_deletions_in_summaries"] == figures["count"]
    elif bench == "in_use_lookups":
        assert figures["correct"] and figures["fetches_per_topic_max"] == 1
    elif bench == "phase_one_delay":
        # A normal deletion finishes well inside the 10 reconsumes allowed: at most one, for
        # a ledger younger than the age rule, and it waits no longer than that rule.
        assert figures["now_max_reconsumes"] <= 1
        assert figures["now_max_waited_seconds"] <= 600 + 10 + 60 + 10
    else:
        assert figures["deleted"] == figures["messages"] and figures["early"] == 0
        assert set(figures["latency_seconds"]) == {"min", "p50", "p95", "p99", "max"}
