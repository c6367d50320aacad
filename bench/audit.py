"""Benchmark of the orphan audit: Spark versus one process, in the same run.

    python -m bench.audit [--json] [--quick] [--zookeeper HOST:PORT[/chroot]]

1. Files: inventories of 1M and 10M ledgers (half referenced) as Parquet. Spark runs the
   whole audit (`audit.pipeline.run_audit`) and the bare anti-join, and reads both files
   whole (every column: what part of the audit's time is reading alone, printed where the
   goal is missed); the baselines are DuckDB
   and Python sets, one process each, computing the same orphan candidates. Spark is timed
   after a small warm-up run (a one-off CLI run also pays the JVM's warm-up, ~10 s); each
   figure is the fastest of `ROUNDS` runs, the audit and the anti-join alternated, and
   every run's seconds are in the JSON.
2. ZooKeeper: 200k ledger znodes in BookKeeper's layout on a real server (started here the
   way harness/zookeeper.py does, unless --zookeeper is given), scanned by Spark (one
   connection per partition) and by the same code in one process with one connection,
   next to the server's create rate and the target (bench/audit_zookeeper.py). Peak RSS
   (bench/rss.py) is reported beside each ZooKeeper figure.

`--quick` shrinks both to seconds (the test suite runs it); `--json` ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import duckdb
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf
from rich.console import Console
from rich.table import Table

from audit.options import AuditOptions
from audit.pipeline import run_audit
from audit.progress import ScanProgress
from audit.session import open_session
from audit.transform import unreferenced
from bench.audit_small import step_name
from bench.audit_zookeeper import (
    ServerCpu,
    bench_zookeeper,
    render_zookeeper,
    zookeeper_verdicts,
)
from bench.rss import jvm_pid, measured

T = TypeVar("T")
DAY_MS = 86_400_000
NOW_MS = 1_700_000_000_000
MIN_AGE_MS = DAY_MS
AUDIT_TARGET = 2.0  # the whole audit within this many times the bare anti-join (issue 33)
TARGET_LEDGERS = 10_000_000  # the audit the target is about
ROUNDS = 5  # each figure from files is the fastest of this many runs


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def generate(spark: SparkSession, n: int, root: Path) -> tuple[Path, Path]:
    """n ledgers created over 30 days, the even ones referenced, ten dangling references."""
    ids = spark.range(n)
    name = sf.format_string(
        "tenant-%d/ns-%d/persistent/topic-%d", ids.id % 10, ids.id % 7, ids.id % 1000
    )
    metadata = sf.create_map(
        sf.lit("application"), sf.lit("pulsar"),
        sf.lit("component"), sf.lit("managed-ledger"),
        sf.lit("pulsar/managed-ledger"), name,
    )  # fmt: skip
    inventory = ids.select(
        sf.col("id").alias("ledger_id"),
        (sf.lit(NOW_MS) - (sf.col("id") * 7919) % (30 * DAY_MS)).alias("ctime_ms"),
        metadata.alias("custom_metadata"),
        ((sf.col("id") % 1000) * 1024).alias("size"),
    )
    references = spark.range(0, n + 20, 2).select(
        sf.col("id").alias("ledger_id"),
        sf.lit("tenant-0/ns-0/topic-0").alias("topic"),
        sf.lit("MANAGED_LEDGER").alias("component"),
        sf.lit(False).alias("bookkeeper_deleted"),
    )
    paths = root / f"inventory-{n}.parquet", root / f"references-{n}.parquet"
    inventory.write.mode("overwrite").parquet(str(paths[0]))
    references.write.mode("overwrite").parquet(str(paths[1]))
    return paths


class Audited(NamedTuple):
    orphans: int
    steps: list[tuple[str, float, int]]  # each step's name, seconds and Spark jobs


def spark_audit(spark: SparkSession, inventory: Path, references: Path) -> Audited:
    """The whole audit as the CLI runs it, without the report (`--output`): nothing cached
    from an earlier run, every job from the files."""
    options = AuditOptions(NOW_MS, MIN_AGE_MS, inventory_file=inventory, references_file=references)
    progress = ScanProgress(spark.sparkContext, Console(quiet=True))
    result = run_audit(spark, options, progress)
    spark.catalog.clearCache()
    steps = [
        (step_name(name), seconds, jobs)
        for (name, seconds), (_, jobs) in zip(progress.timings, progress.jobs, strict=True)
    ]
    return Audited(result.orphans, steps)


def spark_antijoin(spark: SparkSession, inventory: Path, references: Path) -> int:
    """The same orphan candidates (unreferenced and old) from the same files: Spark's floor."""
    inv, refs = spark.read.parquet(str(inventory)), spark.read.parquet(str(references))
    old = unreferenced(inv, refs).where(sf.col("ctime_ms") <= NOW_MS - MIN_AGE_MS)
    return int(old.count())


def spark_read_whole(spark: SparkSession, inventory: Path, references: Path) -> int:
    """Both files read whole, every column (each ledger's custom metadata map too), as the
    audit must read them, and nothing else: what part of the audit's time is reading alone."""
    inv, refs = spark.read.parquet(str(inventory)), spark.read.parquet(str(references))
    (read,) = inv.agg(
        sf.count_if(sf.col("custom_metadata")["component"].isNotNull() | sf.col("size").isNull())
    ).first() or (0,)
    (named,) = refs.agg(
        sf.count_if(sf.col("topic").isNotNull() | sf.col("component").isNull())
    ).first() or (0,)
    return int(read) + int(named)


def duckdb_antijoin(inventory: Path, references: Path) -> int:
    query = f"""
        SELECT count(*) FROM read_parquet('{inventory}/*.parquet') i
        WHERE i.ctime_ms <= {NOW_MS - MIN_AGE_MS} AND NOT EXISTS (
            SELECT 1 FROM read_parquet('{references}/*.parquet') r WHERE r.ledger_id = i.ledger_id)
    """
    row = duckdb.connect().execute(query).fetchone()
    assert row is not None
    return int(row[0])


def python_sets(inventory: Path, references: Path) -> int:
    """Python sets over the ids (DuckDB only reads the Parquet columns into memory)."""
    con = duckdb.connect()
    refs = con.execute(f"SELECT ledger_id FROM read_parquet('{references}/*.parquet')").fetchnumpy()
    inv = con.execute(
        f"SELECT ledger_id, ctime_ms FROM read_parquet('{inventory}/*.parquet')"
    ).fetchnumpy()
    referenced = set(refs["ledger_id"].tolist())
    cutoff = NOW_MS - MIN_AGE_MS
    pairs = zip(inv["ledger_id"].tolist(), inv["ctime_ms"].tolist(), strict=True)
    return sum(1 for ledger_id, ctime in pairs if ctime <= cutoff and ledger_id not in referenced)


Run = tuple[T, float, Any]  # `measured`'s value, seconds and peaks
Fastest = tuple[T, float, Any, list[float]]  # `_fastest` of runs: value, seconds, peaks, all


def _fastest(runs: list[Run[T]]) -> Fastest[T]:
    """The fastest run's value, seconds and peaks, and every run's seconds."""
    value, seconds, rss = min(runs, key=lambda run: run[1])
    return value, seconds, rss, [round(run[1], 2) for run in runs]


def best_of(rounds: int, action: Callable[[], T], jvm: int | None = None) -> Fastest[T]:
    """`measured` over `rounds` runs, as `_fastest` gives them."""
    return _fastest([measured(action, jvm) for _ in range(rounds)])


def _spark_rounds(
    spark: SparkSession, inventory: Path, references: Path, rounds: int
) -> tuple[Fastest[Audited], Fastest[int], Fastest[int]]:
    """The audit, the anti-join and both files read whole, alternated `rounds` times, each its
    fastest run: the first large job of a JVM pays for its heap's growth and its compilation,
    and whichever ran first would carry it alone."""
    jvm = jvm_pid()
    audits: list[Run[Audited]] = []
    joins: list[Run[int]] = []
    reads: list[Run[int]] = []
    for _ in range(rounds):
        audits.append(measured(partial(spark_audit, spark, inventory, references), jvm))
        joins.append(measured(partial(spark_antijoin, spark, inventory, references), jvm))
        reads.append(measured(partial(spark_read_whole, spark, inventory, references), jvm))
    return _fastest(audits), _fastest(joins), _fastest(reads)


def bench_files(
    spark: SparkSession, sizes: list[int], root: Path, log: Console, warm_up: bool, rounds: int
) -> list[dict[str, Any]]:
    if warm_up:  # the JIT's and the first jobs' costs, not measured
        warm_inventory, warm_references = generate(spark, 10_000, root)
        spark_audit(spark, warm_inventory, warm_references)
        spark_antijoin(spark, warm_inventory, warm_references)
    rows = []
    for n in sizes:
        (inventory, references), generated = timed(partial(generate, spark, n, root))
        log.print(f"files: {n:,} ledgers generated in {generated:.1f} s")
        audited, joined, read = _spark_rounds(spark, inventory, references, rounds)
        (audit_orphans, audit_steps), audit_s, audit_rss, audit_runs = audited
        spark_count, spark_s, spark_rss, spark_runs = joined
        duck_count, duck_s, duck_rss, _ = best_of(
            rounds, partial(duckdb_antijoin, inventory, references)
        )
        sets_count, sets_s, sets_rss, _ = best_of(
            rounds, partial(python_sets, inventory, references)
        )
        assert audit_orphans == spark_count == duck_count == sets_count, "the counts disagree"
        best = min(duck_s, sets_s)
        rows.append({
            "ledgers": n, "orphans": spark_count, "rounds": rounds,
            "spark_audit_s": round(audit_s, 2), "spark_antijoin_s": round(spark_s, 2),
            "audit_vs_antijoin": round(audit_s / spark_s, 2), "duckdb_s": round(duck_s, 2),
            "spark_read_whole_s": round(read[1], 2),
            "spark_audit_steps": [[name, round(sec, 2), jobs] for name, sec, jobs in audit_steps],
            "python_sets_s": round(sets_s, 2), "spark_wins": spark_s < best,
            "spark_audit_runs_s": audit_runs, "spark_antijoin_runs_s": spark_runs,
            "spark_audit_peak_rss_mb": audit_rss.as_dict(),
            "spark_antijoin_peak_rss_mb": spark_rss.as_dict(),
            "duckdb_peak_rss_mb": duck_rss.as_dict(),
            "python_sets_peak_rss_mb": sets_rss.as_dict(),
        })  # fmt: skip
        log.print(f"files: {n:,} ledgers audited (spark {audit_s:.1f} s, duckdb {duck_s:.1f} s)")
    return rows


def _compare(spark_s: float, other_s: float, other: str) -> str:
    """Who wins, calling anything within 10% a tie (one run on a shared machine is noisy)."""
    if 0.9 <= spark_s / other_s <= 1.1:
        return f"a tie between Spark and {other}"
    if spark_s < other_s:
        return f"Spark wins ({other_s / spark_s:.1f}x faster than {other})"
    return f"{other} wins ({spark_s / other_s:.1f}x faster than Spark)"


def _target(row: dict[str, Any]) -> str:
    if row["ledgers"] < TARGET_LEDGERS:
        return f"(the {AUDIT_TARGET:g}x goal is for 10M; a job's fixed costs weigh more here)"
    ratio = row["audit_vs_antijoin"]
    if ratio <= AUDIT_TARGET:
        return f"(goal <= {AUDIT_TARGET:g}x: met)"
    steps = ", ".join(
        f"{name} {seconds:.2f} s ({jobs} job{'' if jobs == 1 else 's'})"
        for name, seconds, jobs in row["spark_audit_steps"]
        if seconds >= 0.01
    )
    return (
        f"(goal <= {AUDIT_TARGET:g}x: MISSED by {ratio - AUDIT_TARGET:.2f}; why: the anti-join "
        f"reads the ids and creation times and joins them; the audit first checks each file "
        f"in a pass of its own (a malformed row stops it), then classifies both directions "
        f"(unreferenced ledgers and dangling references) and attributes and summarises the "
        f"unreferenced from their custom metadata in one job: {steps}; reading both files "
        f"whole, every column, took {row['spark_read_whole_s']:.2f} s alone)"
    )


def verdicts(files: list[dict[str, Any]], zk: dict[str, Any]) -> list[str]:
    lines = [
        f"{row['ledgers']:,} ledgers from files, the anti-join: "
        + _compare(
            row["spark_antijoin_s"], min(row["duckdb_s"], row["python_sets_s"]), "one process"
        )
        + f"; the whole audit takes {row['audit_vs_antijoin']:.1f}x the bare anti-join "
        + _target(row)
        for row in files
    ]
    lines.extend(zookeeper_verdicts(zk, _compare))
    lines.append(
        "Spark pays off by scaling out: inventories past one machine's memory, and ZooKeeper "
        "scans spread over many executors' clients. On one machine with inputs that fit, a "
        "single process (DuckDB) is faster; Spark's fixed costs dominate small inputs."
    )
    return lines


def _with_rss(seconds: float, rss: dict[str, float | None]) -> str:
    peaks = " / ".join("-" if v is None else f"{v:.0f}" for v in rss.values())
    return f"{seconds:.2f} s [{peaks}]"


def render(files: list[dict[str, Any]], zk: dict[str, Any], console: Console) -> None:
    caption = "peak RSS in brackets: driver / JVM / largest Python worker (MiB)"
    table = Table("input", "spark audit", "spark anti-join", "duckdb", "python sets", "orphans",
                  caption=caption)  # fmt: skip
    for row in files:
        table.add_row(
            f"{row['ledgers']:,} ledgers (files)",
            _with_rss(row["spark_audit_s"], row["spark_audit_peak_rss_mb"]),
            _with_rss(row["spark_antijoin_s"], row["spark_antijoin_peak_rss_mb"]),
            _with_rss(row["duckdb_s"], row["duckdb_peak_rss_mb"]),
            _with_rss(row["python_sets_s"], row["python_sets_peak_rss_mb"]),
            f"{row['orphans']:,}",
        )
    console.print(table)
    render_zookeeper(zk, console)
    for line in verdicts(files, zk):
        console.print(f"- {line}", highlight=False)


def run(quick: bool, zookeeper: str | None, console: Console) -> dict[str, Any]:
    sizes, znodes = ([20_000], 2_000) if quick else ([1_000_000, 10_000_000], 200_000)
    rounds = 1 if quick else ROUNDS
    started = time.perf_counter()
    session = open_session(None, extra={"spark.driver.memory": "6g"})
    try:
        with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
            files = bench_files(
                session.spark, sizes, Path(tmp), console, warm_up=not quick, rounds=rounds
            )
            if zookeeper is not None:
                zk = bench_zookeeper(session.spark, zookeeper, znodes, console)
            else:
                from harness.zookeeper import ZooKeeperServer

                server = ZooKeeperServer(Path(tmp) / "zookeeper", heap="1g").start()
                try:
                    assert server.process is not None
                    cpu = ServerCpu(server.process.pid)
                    zk = bench_zookeeper(session.spark, server.hosts, znodes, console, cpu)
                finally:
                    server.stop()
    finally:
        session.close()
    return {
        "quick": quick,
        "cores": os.cpu_count(),
        "files": files,
        "zookeeper": zk,
        "verdicts": verdicts(files, zk),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.audit", description=__doc__)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="small inputs, for the tests")
    parser.add_argument("--zookeeper", help="use this server (host:port[/chroot]), not a new one")
    args = parser.parse_args(argv)
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # the server's start-up probes
    console = Console(stderr=args.json, width=120, soft_wrap=True)
    result = run(args.quick, args.zookeeper, console)
    render(result["files"], result["zookeeper"], console)
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
