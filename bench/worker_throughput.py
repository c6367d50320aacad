"""Phase-two throughput: pending deletions fully handled per second by one worker, against a
real ZooKeeper and a real pulsar-lite broker, beside the raw rates of what it is made of.

    python -m bench.worker_throughput [--json] [--quick] [--count N] [--rounds R]
                                      [--parallelism P] [--batch-size B] [--sidecars S]

In one run, after a warm-up round (a tenth of N, not reported: the servers' JITs and caches
warm), R rounds each measure, on the same count N and in this order:
1. the worker (`Sidecar.worker`, ledgerDeletionWorkerThreadsOfTwoPhaseDeletion=P,
   ledgerDeletionBatchSizeOfTwoPhaseDeletion=B) handling N enqueued, committed,
   unreferenced ledgers: decode, in-use look-up (cached), ownership read (a batch's reads
   one multiRead request), znode delete (a batch's deletes one multi request), ack; timed
   from start() to the N-th result; logging warnings only (`run --quiet`), and again as
   `ledger-janitor run` logs by default (INFO: one JSON line a deletion, here to a file);
2. S sidecars' workers (default 2), a process each with its own Pulsar client and
   ZooKeeper session, on the same Shared subscriptions, as one sidecar per broker runs
   them in a cluster (bench/worker_processes.py): the same work, timed from their start
   to the N-th result, whichever process handled it;
3. what a deletion costs ZooKeeper, raw: N ledger reads, each followed by a delete at the
   version read, pipelined in windows of 2,000 (all reads in flight, then all deletes),
   with the deletes sent one by one, again in multi requests (one request a thousand
   deletes, all or none), and again with the reads in multiRead requests of 200 too (the
   way the worker sends them, and the fastest ZooKeeper offers);
4. the raw broker consume-and-ack rate: N messages of the same size on the same kind of
   subscription (Shared, partitioned deletion and retry topics, one listener thread);
5. the whole work by a bare loop with none of the product's checks (`raw_work_rate`:
   receive a batch, one multiRead, one multi delete, ack; pipelined, two consumers a
   namespace; the requests built as the worker builds them), on the same seeding as the
   worker: what this work reaches on this machine,
   where the broker, ZooKeeper and the client share the cores.
Each figure is the best of its R rounds; the limit is the fastest of the three raw pair runs
(the best raw rate of the same work), or consume-and-ack if that is slower. The bare loop's
share of that limit is printed beside the worker's, and the worker's share of the bare loop.
Once, for comparison: the worker with each batch's check, read and delete answered at once, on N (a
diagnostic that patches the domain in its child process: what receiving, decoding and
acking cost alone); the worker one message at a time (B=1, the design before batches) and
raw deletes by one caller, by P threads and pipelined, on min(N, 5,000).

Beside the worker's and the bare loop's figures, the CPU their timed span used
(bench/cpu.py): their process's per message and in cores, and the whole machine's (broker
and ZooKeeper too). The machine's CPU per message bounds the worker's rate on this machine:
what it would reach with every core busy at that cost, printed as a share of the limit.

Every step runs in a forked child of its own (bench/worker_steps.py), whose peak RSS is
printed beside its figure (the sidecars' step: its largest sidecar's). Target: the worker
reaches at least half the limit. `--quick` shrinks N to a smoke run; `--json` ends with one
JSON object.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import Services, console_for, finish, parser, quiet, render, services
from bench.worker_processes import sidecars_rate
from bench.worker_steps import (
    broker_consume_ack_rate,
    in_child,
    kazoo_rate,
    raw_work_rate,
    worker_logged_rate,
    worker_rate,
    worker_receive_rate,
)
from deletion.domain.topics import NamespaceName

TARGET_RATIO = 0.5
BARE_LOOP_GOAL = 0.7  # issue 33: the worker against a bare loop doing the same whole work
PAIRS = ("pairs", "pairs-multi", "pairs-multiread")
ONCE = 5000  # N for the figures measured once, for comparison only


class Steps:
    """Runs each step in its own child, on a chroot or namespace no other step used."""

    def __init__(self, svc: Services, topics: int, parallelism: int, sidecars: int) -> None:
        self._svc, self._topics, self._parallelism = svc, topics, parallelism
        self._sidecars = sidecars
        self._fresh = itertools.count()

    def worker(self, count: int, batch_size: int, way: Callable[..., Any] = worker_rate) -> Any:
        chroot = f"/bench-worker-{next(self._fresh)}"
        return in_child(way, self._svc, chroot, count, self._topics, self._parallelism, batch_size)

    def sidecars(self, count: int, batch_size: int) -> dict[str, Any]:
        chroot = f"/bench-sidecars-{next(self._fresh)}"
        processes = self._sidecars
        args = (self._svc, chroot, count, self._topics, self._parallelism, batch_size, processes)
        return in_child(sidecars_rate, *args)

    def raw_work(self, count: int, batch_size: int) -> dict[str, Any]:
        chroot = f"/raw-work-{next(self._fresh)}"
        return in_child(raw_work_rate, self._svc, chroot, count, self._topics, batch_size)

    def kazoo(self, way: str, count: int) -> dict[str, Any]:
        chroot = f"/raw-{way}-{next(self._fresh)}"
        return in_child(kazoo_rate, self._svc, way, chroot, count, self._parallelism)

    def broker(self, count: int) -> dict[str, Any]:
        namespace = NamespaceName(f"rawbroker{next(self._fresh)}", "ns")
        return in_child(broker_consume_ack_rate, self._svc, namespace, count)

    def round(self, count: int, batch_size: int) -> dict[str, dict[str, Any]]:
        return {
            "worker": self.worker(count, batch_size),
            "worker_logged": self.worker(count, batch_size, worker_logged_rate),
            "sidecars": self.sidecars(count, batch_size),
            **{way: self.kazoo(way, count) for way in PAIRS},
            "broker": self.broker(count),
            "work": self.raw_work(count, batch_size),
        }


def run(
    count: int,
    rounds: int,
    parallelism: int,
    batch_size: int,
    topics: int,
    workdir: Path | None,
    sidecars: int = 2,
) -> dict[str, Any]:
    count -= count % topics  # the worker's seeding spreads N evenly over the topics
    with services(workdir) as svc:
        steps = Steps(svc, topics, parallelism, sidecars)
        steps.round(max(count // 10 // topics, 1) * topics, batch_size)  # warm-up
        measured = [steps.round(count, batch_size) for _ in range(rounds)]
        once = min(count, ONCE)
        one_at_a_time = steps.worker(once, 1)
        receive_only = steps.worker(count, batch_size, worker_receive_rate)
        raw = {way: steps.kazoo(way, once) for way in ("sync", "threads", "async")}
    names = ("worker", "worker_logged", "sidecars", *PAIRS, "broker", "work")
    best = {name: _best([r[name] for r in measured]) for name in names}
    limit = max(best[way]["per_second"] for way in PAIRS)
    slower = min(limit, best["broker"]["per_second"])
    worker = best["worker"]["per_second"]
    return {
        "bench": "worker_throughput",
        "count": count,
        "rounds": rounds,
        "topics": topics,
        "parallelism": parallelism,
        "batch_size": batch_size,
        "figures": {
            **best,
            "worker_one_at_a_time": one_at_a_time,
            "worker_receive_only": receive_only,
            **raw,
        },
        "once_count": once,
        "worker_per_second": worker,
        "worker_outcomes": best["worker"]["outcomes"],
        "worker_one_at_a_time_per_second": one_at_a_time["per_second"],
        "worker_receive_only_per_second": receive_only["per_second"],
        "worker_receive_only_ratio_to_raw_whole_work": receive_only["per_second"]
        / best["work"]["per_second"],
        "worker_logged_per_second": best["worker_logged"]["per_second"],
        "worker_logged_ratio_to_slower_raw": best["worker_logged"]["per_second"] / slower,
        "worker_logged_deletions_in_summaries": best["worker_logged"]["deletions_in_summaries"],
        "sidecars": sidecars,
        "sidecars_per_second": best["sidecars"]["per_second"],
        "sidecars_handled_by_each": best["sidecars"]["handled_by_each"],
        "sidecars_machine_busy_cores": best["sidecars"]["machine_busy_cores"],
        "sidecars_ratio_to_slower_raw": best["sidecars"]["per_second"] / slower,
        "raw_kazoo_delete_per_second": raw["sync"]["per_second"],
        "raw_kazoo_delete_threads_per_second": raw["threads"]["per_second"],
        "raw_kazoo_delete_pipelined_per_second": raw["async"]["per_second"],
        "raw_kazoo_read_delete_pairs_pipelined_per_second": best["pairs"]["per_second"],
        "raw_kazoo_read_delete_pairs_multi_per_second": best["pairs-multi"]["per_second"],
        "raw_kazoo_read_delete_pairs_multiread_per_second": best["pairs-multiread"]["per_second"],
        "raw_broker_consume_ack_per_second": best["broker"]["per_second"],
        "raw_whole_work_per_second": best["work"]["per_second"],
        "ratio_to_raw_whole_work": worker / best["work"]["per_second"],
        "raw_whole_work_ratio_to_slower_raw": best["work"]["per_second"] / slower,
        "correct": all(r["worker"]["correct"] for r in measured)
        and one_at_a_time["correct"]
        and all(r["sidecars"]["correct"] and r["worker_logged"]["correct"] for r in measured),
        "limit_per_second": limit,
        "slower_raw_per_second": slower,
        "ratio_to_slower_raw": worker / slower,
        "ratio_to_pairs_sent_one_by_one": worker / best["pairs"]["per_second"],
        "ratio_per_round": [
            r["worker"]["per_second"]
            / min(max(r[way]["per_second"] for way in PAIRS), r["broker"]["per_second"])
            for r in measured
        ],
        **_cpu("worker", best["worker"]),
        **_cpu("raw_whole_work", best["work"]),
        "machine_cores": best["worker"]["machine_cores"],
        "worker_all_cores_bound_per_second": _all_cores(best["worker"]),
        "worker_all_cores_bound_ratio": _all_cores(best["worker"]) / slower,
        "peak_rss_mb": max(f["peak_rss_mb"] for r in measured for f in r.values()),
        "target_ratio": TARGET_RATIO,
        "bare_loop_goal": BARE_LOOP_GOAL,
        "bare_loop_goal_met": worker / best["work"]["per_second"] >= BARE_LOOP_GOAL,
        "target_met": worker >= TARGET_RATIO * slower,
    }


def _goal(ratio: float, goal: float) -> str:
    return "met" if ratio >= goal else f"missed by {goal - ratio:.2f}"


def _cpu(name: str, figure: dict[str, Any]) -> dict[str, float]:
    keys = (
        "cpu_us_per_message",
        "machine_cpu_us_per_message",
        "process_cores",
        "machine_busy_cores",
    )
    return {f"{name}_{key}": float(figure[key]) for key in keys}


def _all_cores(figure: dict[str, Any]) -> float:
    """The rate at which the machine's every core would be busy, at the CPU a message cost
    the whole machine (worker, broker, ZooKeeper) in that run."""
    return float(figure["machine_cores"]) / (float(figure["machine_cpu_us_per_message"]) / 1e6)


def _best(figures: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest round's figures, with the highest peak RSS of any round."""
    fastest = max(figures, key=lambda figure: float(figure["per_second"]))
    return {**fastest, "peak_rss_mb": max(figure["peak_rss_mb"] for figure in figures)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser("worker_throughput", __doc__)
    args.add_argument("--count", type=int, help="pending deletions (default 20000, quick 400)")
    args.add_argument("--rounds", type=int, help="measured rounds (default 3, quick 1)")
    args.add_argument("--parallelism", type=int, default=4)
    args.add_argument("--batch-size", type=int, default=128)
    args.add_argument("--topics", type=int, default=20)
    args.add_argument(
        "--sidecars", type=int, default=2, help="worker processes in the sidecars' run (default 2)"
    )
    options = args.parse_args(argv)
    quiet()
    count = options.count or (400 if options.quick else 20_000)
    rounds = options.rounds or (1 if options.quick else 3)
    result = run(
        count,
        rounds,
        options.parallelism,
        options.batch_size,
        options.topics,
        options.workdir,
        options.sidecars,
    )
    console = console_for(options.json)
    n, once, figures = result["count"], result["once_count"], result["figures"]
    p = result["parallelism"]
    rows = [
        (
            f"worker: fully handled (check, delete, ack), batches of {result['batch_size']}, "
            "logging warnings only (`run --quiet`)",
            "worker",
        ),
        (
            "worker logging as `run` does by default (INFO: a JSON line a deletion, to a file)",
            "worker_logged",
        ),
        (
            f"{result['sidecars']} sidecars' workers, a process each, on one subscription",
            "sidecars",
        ),
        ("raw ledger read + versioned delete, pipelined, deletes one by one", "pairs"),
        ("raw ledger read + versioned delete, pipelined, deletes in multi requests", "pairs-multi"),
        (
            "raw ledger read + versioned delete, reads in multiRead, deletes in multi requests",
            "pairs-multiread",
        ),
        ("raw broker consume-and-ack", "broker"),
        ("raw whole work, no product code: receive, multiRead, multi delete, ack", "work"),
        (
            "worker, check/read/delete answered at once (diagnostic, once: receive, decode, ack)",
            "worker_receive_only",
        ),
    ]
    compared = [
        ("worker: one message at a time (batch size 1)", "worker_one_at_a_time"),
        ("raw kazoo delete, 1 caller", "sync"),
        (f"raw kazoo delete, {p} threads", "threads"),
        ("raw kazoo delete, pipelined", "async"),
    ]
    render(
        f"Worker throughput: {n:,} pending deletions, parallelism {p}, "
        f"best of {result['rounds']} rounds; below the line, once on {once:,}",
        ["what", "per second", "seconds for N", "peak RSS (MB)"],
        [
            *(_row(label, figures[key], n) for label, key in rows),
            ("", "", "", ""),
            *(_row(label, figures[key], once) for label, key in compared),
        ],
        console,
    )
    verdict = "met" if result["target_met"] else "NOT met"
    rounds_text = ", ".join(f"{ratio:.2f}" for ratio in result["ratio_per_round"])
    console.print(
        f"worker / min(best raw read+delete pairs, consume-and-ack) = "
        f"{result['ratio_to_slower_raw']:.2f} (target >= {TARGET_RATIO}: {verdict}); "
        f"per round {rounds_text}; against pairs with deletes sent one by one "
        f"{result['ratio_to_pairs_sent_one_by_one']:.2f}. Logging as `run` does by default (a "
        f"`worked` line every 10 s): {result['worker_logged_ratio_to_slower_raw']:.2f}. "
        f"{result['sidecars']} sidecars' "
        f"workers together: {result['sidecars_ratio_to_slower_raw']:.2f} (results per process "
        f"{result['sidecars_handled_by_each']}). The same whole work by a bare loop "
        f"reaches {result['raw_whole_work_ratio_to_slower_raw']:.2f} of that limit here; the "
        f"worker reaches {result['ratio_to_raw_whole_work']:.2f} of the bare loop (goal >= "
        f"{BARE_LOOP_GOAL}: {_goal(result['ratio_to_raw_whole_work'], BARE_LOOP_GOAL)}; the "
        "loop makes none of the checks: decoding, ownership, the in-use snapshot, the age "
        "rule, the observers; with each batch's checks, reads and deletes answered at once, "
        "the worker's receiving, decoding and acking alone reach "
        f"{result['worker_receive_only_ratio_to_raw_whole_work']:.2f} of the loop's whole "
        "work, and the rest is the checks and the two store round trips each handler thread "
        "waits for, a batch at a time, where the loop keeps its batches in flight on "
        "callbacks). "
        f"Outcomes {result['worker_outcomes']}; "
        f"exactly the released ledgers deleted: {result['correct']}. Peak RSS is that of the "
        "step's own child process (worker or raw client; of the sidecars, the largest one), "
        "not of ZooKeeper or the broker."
    )
    console.print(
        f"CPU, fastest round: the worker's process spent "
        f"{result['worker_cpu_us_per_message']:.0f} µs a message, "
        f"{result['worker_process_cores']:.2f} of a core, while the machine kept "
        f"{result['worker_machine_busy_cores']:.2f} of its {result['machine_cores']:.0f} cores "
        f"busy; the bare loop's, {result['raw_whole_work_cpu_us_per_message']:.0f} µs a "
        f"message ({result['raw_whole_work_machine_busy_cores']:.2f} cores busy). A process "
        "near one core with cores to spare is bound by its interpreter lock. At "
        f"{result['worker_machine_cpu_us_per_message']:.0f} µs of the whole machine's CPU a "
        f"message, all {result['machine_cores']:.0f} cores busy would handle at most "
        f"{result['worker_all_cores_bound_per_second']:,.0f} a second, "
        f"{result['worker_all_cores_bound_ratio']:.2f} of the limit."
    )
    return finish(result, options.json)


def _row(label: str, figure: dict[str, Any], count: int) -> tuple[str, float, float, float]:
    rate = float(figure["per_second"])
    return (label, rate, count / rate, float(figure["peak_rss_mb"]))


if __name__ == "__main__":
    main()
