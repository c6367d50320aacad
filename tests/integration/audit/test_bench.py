"""`python -m bench.audit --quick --json` runs and prints figures of the documented shape."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession

pytest.importorskip("duckdb", reason="the benchmark's baseline needs DuckDB (the test extra)")

from bench import audit as bench
from harness.zookeeper import ZooKeeperServer


def test_quick_benchmark_prints_one_json_line(
    spark: SparkSession,
    zookeeper: ZooKeeperServer,
    chroot: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench.main(["--quick", "--json", "--zookeeper", f"{zookeeper.hosts}{chroot}"])

    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(figures) == {"quick", "cores", "files", "zookeeper", "verdicts", "seconds"}
    (files,) = figures["files"]
    assert files["ledgers"] == 20_000 and files["orphans"] > 0
    assert {"spark_audit_s", "spark_antijoin_s", "duckdb_s", "python_sets_s", "spark_wins"} <= set(
        files
    )
    for step in ("spark_audit", "spark_antijoin", "duckdb", "python_sets"):
        assert files[f"{step}_peak_rss_mb"]["driver_mb"] > 0
    assert files["rounds"] == 1 and files["spark_audit_runs_s"] == [files["spark_audit_s"]]
    assert files["spark_antijoin_runs_s"] == [files["spark_antijoin_s"]]
    assert files["spark_audit_peak_rss_mb"]["jvm_mb"] > 0
    zk = figures["zookeeper"]
    assert zk["znodes"] == 2_000
    assert all(zk[k] > 0 for k in ("create_per_s", "spark_per_s", "single_client_per_s"))
    assert zk["target_per_s"] == 25_000 and zk["target_met"] == (zk["spark_per_s"] >= 25_000)
    for step in ("create", "spark", "single_client"):
        assert zk[f"{step}_peak_rss_mb"]["driver_mb"] > 0
    workers = zk["spark_peak_rss_mb"]
    assert workers["jvm_mb"] > workers["python_workers_mb"] > 0  # the scan ran in workers
    assert zk["server_cpu_us_per_read"] is None  # not our server: its CPU is not ours to read
    # The raw multiRead rate of the same znodes, the scan's limit, measured in the same run.
    assert zk["raw_multiread_per_s"] > 0 and zk["raw_goal"] == 0.5
    assert zk["raw_goal_met"] == (zk["ratio_to_raw"] >= 0.5)
    assert any("of the raw multiRead rate" in line for line in figures["verdicts"])
    # What bounds the scan here: the machine's CPU a znode, and the rate all cores allow.
    assert zk["spark_machine_cpu_us_per_read"] > 0 and zk["raw_machine_cpu_us_per_read"] >= 0
    bound = zk["machine_cores"] / zk["spark_machine_cpu_us_per_read"] * 1e6
    assert abs(zk["spark_all_cores_bound_per_s"] - bound) <= 0.01 * bound + 1
    assert any(line.startswith("What bounds it here") for line in figures["verdicts"])
    assert len(figures["verdicts"]) == 6 and "Spark" in figures["verdicts"][-1]
    assert any("25,000/s with 2 partitions" in line for line in figures["verdicts"])
    assert spark.getActiveSession() is not None  # the shared session survives the benchmark
