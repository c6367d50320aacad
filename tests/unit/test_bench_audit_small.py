"""bench.audit_small's account of a missed goal: its parts and its `why`, from one run's figures."""

from __future__ import annotations

from typing import Any

from bench.audit_small import _parts_rows, _why

BARE = {"import": 0.06, "spark_start": 3.5, "job": 1.8, "spark_stop": 0.3,
        "python start and exit": 0.4}  # fmt: skip
AUDIT = {
    "python start, imports and exit": 1.06,
    "before_spark": 0.001,
    "spark_start": 3.4,
    "inventory: reading ledger metadata": 0.57,
    "classifying (referenced ids as 64-bit words)": 3.56,
    "spark_stop": 0.42,
    "other (printing, the report)": 0.15,
}
JOBS = {"inventory: reading ledger metadata": 0,
        "classifying (referenced ids as 64-bit words)": 10}  # fmt: skip


def test_each_step_says_its_jobs_beside_the_floor_s_one() -> None:
    rows = {label: (bare, audit) for label, bare, audit in _parts_rows(BARE, AUDIT, JOBS)}
    assert rows["the job (one)"] == ("1.80", "")
    assert rows["classifying (referenced ids as 64-bit words) (10 jobs)"] == ("", "3.56")
    assert rows["inventory: reading ledger metadata (0 jobs)"] == ("", "0.57")
    assert rows["python start, imports, exit"] == ("0.46", "1.06")
    assert rows["Spark's start (JVM, session)"] == ("3.50", "3.40")


def test_why_counts_the_jobs_and_what_they_took_against_the_floor() -> None:
    result: dict[str, Any] = {"bare_spark_parts": BARE, "audit_parts": AUDIT, "audit_jobs": JOBS}
    assert _why(result) == (
        "why: its steps took 4.13 s (10 Spark jobs, and their queries built over py4j) against "
        "the floor's one job in 1.80 s, on a JVM still loading and compiling what each new "
        "operator needs; Python's start, imports and exit took 0.60 s more"
    )
