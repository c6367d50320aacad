"""What a small audit costs beyond Spark's own start: `ledger-janitor audit` of the demo's
store (its SQLite files, 42 ledgers) against a bare local Spark session that starts, runs one
job and stops, both in processes of their own, in the same run. The goal: the audit at most
GOAL times the bare floor.

    python -m bench.audit_small [--json] [--quick] [--rounds R]

Each round runs the bare floor, then the audit (`--spark-master local[2] --json`), each timed
from its process's start to its exit; the figures are each one's median over R rounds. Where
the audit's time goes is its own account (`audit --json`'s `timings`): the checks and stores
before Spark, Spark's start (the JVM and the session), each step and how many Spark jobs it
ran (each on a JVM that loads and compiles what a new operator needs the first time: why a
job costs the audit more than the floor's one), Spark's stop; the rest of its wall time is
Python's start and the imports. The bare floor says the same of
itself (import, session, job, stop).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import console_for, finish, parser, render

GOAL = 1.3
MASTER = "local[2]"
# The floor: what any PySpark job pays, with the audit's own session settings (local mode,
# no UI) and nothing of this project.
BARE = f"""
import json, os, time
began = time.monotonic()
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
from pyspark.sql import SparkSession
imported = time.monotonic()
spark = (SparkSession.builder.master("{MASTER}").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
started = time.monotonic()
spark.range(1).count()
ran = time.monotonic()
spark.stop()
stopped = time.monotonic()
print(json.dumps({{"import": imported - began, "spark_start": started - imported,
                  "job": ran - started, "spark_stop": stopped - ran}}))
"""


def _timed_run(command: list[str], cwd: Path) -> tuple[float, dict[str, Any]]:
    """Wall seconds from start to exit, and the JSON object of the last stdout line."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, check=False)
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[:4])} exited {done.returncode}:\n{done.stderr[-2000:]}"
        )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, figures


def demo_store(workdir: Path) -> Path:
    """The demo's SQLite store, made by `ledger-janitor demo` as a user makes it."""
    _timed_run(
        [sys.executable, "-m", "ledger_janitor", "demo", "--workdir", "w", "--json"], workdir
    )
    return workdir / "w" / "janitor.db"


def step_name(description: str) -> str:
    """A progress step's description without the store or file it read:
    `inventory: reading ledger metadata from ...` -> `inventory: reading ledger metadata`,
    `inventory: reading /tmp/inventory.parquet` -> `inventory: reading`."""
    return description.split(" from ", 1)[0].split(" /", 1)[0]


def run(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-audit-small-") as tmp:
        workdir = Path(tmp)
        store = demo_store(workdir)
        audit = [sys.executable, "-m", "ledger_janitor", "audit", "--json",
                 "--metadata-store", f"sqlite:{store}", "--spark-master", MASTER,
                 "--min-age", "0s"]  # fmt: skip
        bare_runs: list[tuple[float, dict[str, Any]]] = []
        audit_runs: list[tuple[float, dict[str, Any]]] = []
        for _ in range(rounds):
            bare_runs.append(_timed_run([sys.executable, "-c", BARE], workdir))
            audit_runs.append(_timed_run(audit, workdir))
    floor = statistics.median(wall for wall, _ in bare_runs)
    took = statistics.median(wall for wall, _ in audit_runs)
    bare_parts = {
        key: statistics.median(parts[key] for _, parts in bare_runs)
        for key in ("import", "spark_start", "job", "spark_stop")
    }
    bare_parts["python start and exit"] = floor - sum(bare_parts.values())
    audit_parts: dict[str, float] = {
        "python start, imports and exit": statistics.median(
            wall - figures["seconds"] for wall, figures in audit_runs
        )
    }
    for key in ("before_spark", "spark_start"):
        audit_parts[key] = statistics.median(f["timings"][key] for _, f in audit_runs)
    steps = [step_name(d) for d, _ in audit_runs[0][1]["timings"]["steps"]]
    for index, name in enumerate(steps):
        audit_parts[name] = statistics.median(
            f["timings"]["steps"][index][1] for _, f in audit_runs
        )
    audit_parts["spark_stop"] = statistics.median(f["timings"]["spark_stop"] for _, f in audit_runs)
    jobs = {step_name(d): n for d, n in audit_runs[-1][1]["timings"]["jobs"]}
    audit_parts["other (printing, the report)"] = took - sum(audit_parts.values())
    ratio = took / floor
    return {
        "bench": "audit_small",
        "rounds": rounds,
        "ledgers": audit_runs[0][1]["ledgers"],
        "bare_spark_seconds": floor,
        "audit_seconds": took,
        "ratio_to_bare_spark": ratio,
        "goal_ratio": GOAL,
        "goal_met": ratio <= GOAL,
        "bare_spark_per_round": [wall for wall, _ in bare_runs],
        "audit_per_round": [wall for wall, _ in audit_runs],
        "bare_spark_parts": bare_parts,
        "audit_parts": audit_parts,
        "audit_jobs": jobs,  # Spark jobs each step ran (the last round's); the floor runs one
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser("audit_small", __doc__)
    args.add_argument("--rounds", type=int, help="measured rounds (default 3, quick 1)")
    options = args.parse_args(argv)
    rounds = options.rounds or (1 if options.quick else 3)
    result = run(rounds)
    console = console_for(options.json)
    render(
        f"A small audit ({result['ledgers']} ledgers, the demo's store) against bare Spark, "
        f"median of {result['rounds']} rounds",
        ["", "seconds", "per round"],
        [
            (
                "bare Spark: start, one job, stop",
                result["bare_spark_seconds"],
                ", ".join(f"{s:.1f}" for s in result["bare_spark_per_round"]),
            ),
            (
                "ledger-janitor audit",
                result["audit_seconds"],
                ", ".join(f"{s:.1f}" for s in result["audit_per_round"]),
            ),
        ],
        console,
    )
    render(
        "Where the time goes (medians, seconds)",
        ["part", "bare Spark", "audit"],
        _parts_rows(result["bare_spark_parts"], result["audit_parts"], result["audit_jobs"]),
        console,
    )
    ratio = result["ratio_to_bare_spark"]
    console.print(
        f"audit / bare Spark = {ratio:.2f} (goal {GOAL}: "
        f"{'met' if result['goal_met'] else f'missed by {ratio - GOAL:.2f}'})"
    )
    if not result["goal_met"]:
        console.print(_why(result), soft_wrap=True)
    return finish(result, options.json)


def _why(result: dict[str, Any]) -> str:
    """What the audit adds to the floor, from this run's parts."""
    bare, audit, jobs = result["bare_spark_parts"], result["audit_parts"], result["audit_jobs"]
    in_steps = sum(seconds for step, seconds in audit.items() if step in jobs)
    python = audit["python start, imports and exit"] - _floor_python(bare)
    return (
        f"why: its steps took {in_steps:.2f} s ({sum(jobs.values())} Spark jobs, and their "
        f"queries built over py4j) against the floor's one job in {bare['job']:.2f} s, on a JVM "
        f"still loading and compiling what each new operator needs; Python's start, imports "
        f"and exit took {python:.2f} s more"
    )


def _floor_python(bare: dict[str, float]) -> float:
    """The floor's Python: its start, its imports and its exit."""
    return bare["import"] + bare["python start and exit"]


def _parts_rows(
    bare: dict[str, float], audit: dict[str, float], jobs: dict[str, int]
) -> list[tuple[str, str, str]]:
    shared = {"spark_start": "Spark's start (JVM, session)", "spark_stop": "Spark's stop"}
    rows = [(label, f"{bare[key]:.2f}", f"{audit[key]:.2f}") for key, label in shared.items()]
    audit_python = audit["python start, imports and exit"]
    rows.append(
        ("python start, imports, exit", f"{_floor_python(bare):.2f}", f"{audit_python:.2f}")
    )
    rows.append(("the job (one)", f"{bare['job']:.2f}", ""))
    rows.extend(
        (f"{key} ({jobs[key]} jobs)" if key in jobs else key, "", f"{value:.2f}")
        for key, value in audit.items()
        if key not in shared and key != "python start, imports and exit"
    )
    return rows


if __name__ == "__main__":
    main()
