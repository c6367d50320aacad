"""What the default log costs the worker: the same work timed with `run`'s default logging
(INFO: a `worked` summary line every 10 s, consumers/log_summary.py; here to a file) and quiet
(`run --quiet`: warnings only), in one run, against a real ZooKeeper and a real pulsar-lite
broker. The goal: the default at least GOAL of quiet.

    python -m bench.worker_logging [--json] [--quick] [--count N] [--rounds R]

Each round times both on N enqueued, committed, unreferenced ledgers, each in a fresh forked
child (bench/worker_steps.py: `worker_rate` and `worker_logged_rate`), quiet first then
logged, after a warm-up round of a tenth of N; each figure is the best of its R rounds.
Last, what one `deleted` line (each message's, at DEBUG: `run -v`) costs the thread that logs
it, alone (50,000 lines to a file): what a line a deletion cost when it was the default.
`bench.worker_throughput` prints the same two figures beside the raw rates.
"""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path
from typing import Any

import structlog

from bench import children
from bench._common import console_for, finish, parser, quiet, render, services
from bench.worker_steps import in_child, worker_logged_rate, worker_rate
from ledger_janitor import logs

TOPICS = 20
LINES = 50_000
GOAL = 0.9


def line_cost_us(path: Path, lines: int = LINES) -> float:
    """Microseconds one `deleted` line costs the thread logging it, alone (no worker), with
    `run -v`'s configuration writing to a file; until every line is written."""
    with path.open("w") as stream:
        logs.configure(logging.DEBUG, json_output=True, stream=stream)
        log = structlog.get_logger("consumers.handler")
        started = time.perf_counter()
        for i in range(lines):
            log.debug(
                "deleted",
                reason="no metadata references it",
                message_id="7:1:2",
                namespace="tenant/ns",
                deletion_topic="persistent://tenant/ns/__ledger_deletion-partition-1",
                ledger_id=i,
                topic="tenant/ns/topic-1",
                component="MANAGED_LEDGER",
                ledger_type="LEDGER",
            )
        logs.flush()
        return (time.perf_counter() - started) / lines * 1e6


def run(count: int, rounds: int, parallelism: int, batch_size: int) -> dict[str, Any]:
    count -= count % TOPICS
    fresh = itertools.count()
    figures: dict[str, list[dict[str, Any]]] = {"quiet": [], "logged": []}
    with services() as svc:

        def step(way: Any, n: int) -> dict[str, Any]:
            chroot = f"/bench-logging-{next(fresh)}"
            return in_child(way, svc, chroot, n, TOPICS, parallelism, batch_size)

        warm = max(count // 10 // TOPICS, 1) * TOPICS
        step(worker_rate, warm)
        step(worker_logged_rate, warm)
        for _ in range(rounds):
            figures["quiet"].append(step(worker_rate, count))
            figures["logged"].append(step(worker_logged_rate, count))
        line_us = children.in_child(line_cost_us, svc.root / "line-cost.log")
    best = {name: max(f["per_second"] for f in runs) for name, runs in figures.items()}
    return {
        "bench": "worker_logging",
        "count": count,
        "rounds": rounds,
        "parallelism": parallelism,
        "batch_size": batch_size,
        "quiet_per_second": best["quiet"],
        "default_logging_per_second": best["logged"],
        "default_logging_ratio": best["logged"] / best["quiet"],
        "quiet_per_round": [f["per_second"] for f in figures["quiet"]],
        "default_logging_per_round": [f["per_second"] for f in figures["logged"]],
        "goal_ratio": GOAL,
        "goal_met": best["logged"] / best["quiet"] >= GOAL,
        "log_lines": figures["logged"][-1]["log_lines"],
        "summary_lines": figures["logged"][-1]["summary_lines"],
        "deletions_in_summaries": figures["logged"][-1]["deletions_in_summaries"],
        "line_cost_us": line_us,
        "correct": all(f["correct"] for runs in figures.values() for f in runs),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser("worker_logging", __doc__)
    args.add_argument("--count", type=int, help="pending deletions (default 20000, quick 400)")
    args.add_argument("--rounds", type=int, help="measured rounds (default 3, quick 1)")
    args.add_argument("--parallelism", type=int, default=4)
    args.add_argument("--batch-size", type=int, default=128)
    options = args.parse_args(argv)
    quiet()
    count = options.count or (400 if options.quick else 20_000)
    rounds = options.rounds or (1 if options.quick else 3)
    result = run(count, rounds, options.parallelism, options.batch_size)
    console = console_for(options.json)
    render(
        f"Worker: {result['count']:,} pending deletions, best of {result['rounds']} rounds",
        ["logging", "per second", "per round"],
        [
            (
                "quiet (`run --quiet`: warnings only)",
                result["quiet_per_second"],
                ", ".join(f"{r:,.0f}" for r in result["quiet_per_round"]),
            ),
            (
                "default (`run`: INFO, a `worked` line every 10 s)",
                result["default_logging_per_second"],
                ", ".join(f"{r:,.0f}" for r in result["default_logging_per_round"]),
            ),
        ],
        console,
    )
    ratio = result["default_logging_ratio"]
    console.print(
        f"default logging / quiet = {ratio:.2f} (goal {GOAL}: "
        f"{'met' if result['goal_met'] else f'missed by {GOAL - ratio:.2f}'}); "
        f"the worker's log in the last logged round: {result['log_lines']:,} lines, "
        f"{result['summary_lines']} of them `worked` lines counting "
        f"{result['deletions_in_summaries']:,} deletions; "
        f"a line a deletion (`run -v`) costs its thread {result['line_cost_us']:.1f} µs; "
        f"exactly the released ledgers deleted: {result['correct']}"
    )
    return finish(result, options.json)


if __name__ == "__main__":
    main()
