"""Phase-two throughput: pending deletions fully handled per second by one worker, against a
real ZooKeeper and a real pulsar-lite broker, beside the raw rates of what it is made of.

    python -m bench.worker_throughput [--json] [--quick] [--count N] [--parallelism P]
                                      [--batch-size B]

In one run, for the same count N:
1. the worker (`Sidecar.worker`, ledgerDeletionWorkerThreadsOfTwoPhaseDeletion=P,
   ledgerDeletionBatchSizeOfTwoPhaseDeletion=B) handles N enqueued, committed, unreferenced
   ledgers: decode, in-use look-up (cached), ownership read, znode delete, ack; timed from
   start() to the N-th result; then again one message at a time (B=1), the design before
   batches, for comparison;
2. raw kazoo work on N znodes of the same layout and size: deletes by one caller
   (synchronous), by P threads on one client, pipelined (asynchronous); and what a deletion
   really costs, a ledger read then a delete at the version read, pipelined in windows of
   2,000 (all reads in flight, then all deletes): the limit the worker is measured against;
3. the raw broker consume-and-ack rate: N messages of the same size on the same kind of
   subscription (Shared, partitioned deletion and retry topics, one listener thread).

Target: the worker reaches at least half the slower of (pipelined read-and-delete pairs,
broker consume-and-ack). `--quick` shrinks N to a smoke run; `--json` ends with one JSON object.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pulsar

from bench._common import (
    Services,
    console_for,
    create_ledgers,
    enqueue_then_commit,
    finish,
    ledger_znode,
    parser,
    pending,
    quiet,
    remaining,
    render,
    seed,
    services,
    timed,
    topics_over,
)
from deletion.domain import message
from deletion.domain.message import LedgerComponent
from deletion.domain.message_properties import DELAY_TIME
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from harness.janitor import Recorder
from ledger_janitor.wiring import open_sidecar

TARGET_RATIO = 0.5
WINDOW = 2000  # requests in flight at once in the pipelined raw runs


def worker_rate(
    svc: Services, count: int, topics: int, parallelism: int, batch_size: int
) -> dict[str, Any]:
    config = svc.config(
        f"/bench-worker-{batch_size}",
        ledger_deletion_worker_threads_of_two_phase_deletion=parallelism,
        ledger_deletion_batch_size_of_two_phase_deletion=batch_size,
    )
    sidecar = open_sidecar(config, client_log=svc.root / "client.log")
    try:
        client = sidecar.metadata.client  # type: ignore[attr-defined]
        seeded = seed(client, sidecar.metadata, topics_over(4, topics), count // topics)
        released = {i for entry in seeded for i in entry.released}
        enqueue_then_commit(sidecar, seeded)
        recorder = Recorder()
        worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=1.0)
        started = time.perf_counter()
        worker.start()
        recorder.wait_for(lambda results: len(results) >= len(released), timeout=600)
        elapsed = time.perf_counter() - started
        worker.stop()
        left = remaining(sidecar.metadata)
        referenced = set().union(*(entry.referenced() for entry in seeded))
        correct = not (left & released) and referenced <= left
        return {
            "count": len(released),
            "seconds": elapsed,
            "per_second": len(released) / elapsed,
            "outcomes": worker.stats.summary(),
            "correct": correct,
        }
    finally:
        sidecar.close()


def kazoo_delete_rates(svc: Services, count: int, parallelism: int) -> dict[str, float]:
    """The same znodes (BookKeeper's layout, the same bytes) deleted four ways."""
    data = ledger_znode(TopicName(NamespaceName("raw", "ns"), "t"), LedgerComponent.MANAGED_LEDGER)
    paths = [bk.ledger_path(i) for i in range(1, count + 1)]
    rates: dict[str, float] = {}
    for way in ("sync", "threads", "async", "pairs"):
        client = svc.kazoo()
        client.ensure_path(f"/raw-{way}")
        client.stop()
        client.close()
        scoped = svc.kazoo(f"/raw-{way}")
        try:
            create_ledgers(scoped, [(i, data) for i in range(1, count + 1)])
            _, seconds = timed(partial(_delete, way, scoped, paths, parallelism))
        finally:
            scoped.stop()
            scoped.close()
        rates[way] = count / seconds
    return rates


def _delete(way: str, client: Any, paths: list[str], parallelism: int) -> None:
    if way == "sync":
        for path in paths:
            client.delete(path)
    elif way == "threads":
        chunks = [paths[i::parallelism] for i in range(parallelism)]
        threads = [
            threading.Thread(target=lambda chunk=chunk: [client.delete(p) for p in chunk])
            for chunk in chunks
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elif way == "async":
        for start in range(0, len(paths), WINDOW):
            for result in [client.delete_async(p) for p in paths[start : start + WINDOW]]:
                result.get()
    else:
        for start in range(0, len(paths), WINDOW):
            window = paths[start : start + WINDOW]
            stats = [read.get()[1] for read in [client.get_async(p) for p in window]]
            deletes = [
                client.delete_async(p, version=stat.version)
                for p, stat in zip(window, stats, strict=True)
            ]
            for result in deletes:
                result.get()


def broker_consume_ack_rate(svc: Services, count: int) -> float:
    """Produce N messages like phase one's, then consume and ack them as the worker does."""
    namespace = NamespaceName("rawbroker", "ns")
    client = pulsar.Client(
        svc.broker.service_url,
        message_listener_threads=1,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(svc.root / "raw-client.log")),
    )
    try:
        payload = message.encode(pending(TopicName(namespace, "t"), 2**40))
        producer = client.create_producer(namespace.deletion_topic, batching_enabled=False)
        for _ in range(count):
            producer.send_async(payload, None, properties={DELAY_TIME: "0"})
        producer.flush()
        done, acked = threading.Event(), [0]

        def on_message(consumer: Any, received: Any) -> None:
            consumer.acknowledge(received)
            acked[0] += 1
            if acked[0] >= count:
                done.set()

        started = time.perf_counter()
        consumer = client.subscribe(
            [namespace.deletion_topic, namespace.retry_topic],
            SUBSCRIPTION,
            consumer_type=pulsar.ConsumerType.Shared,
            message_listener=on_message,
            receiver_queue_size=100,
            initial_position=pulsar.InitialPosition.Earliest,
        )
        if not done.wait(600):
            raise RuntimeError(f"only {acked[0]} of {count} messages consumed")
        elapsed = time.perf_counter() - started
        consumer.close()
        return count / elapsed
    finally:
        client.close()


def run(
    count: int, parallelism: int, batch_size: int, topics: int, workdir: Path | None
) -> dict[str, Any]:
    with services(workdir) as svc:
        worker = worker_rate(svc, count, topics, parallelism, batch_size)
        one_at_a_time = worker_rate(svc, count, topics, parallelism, 1)
        kazoo = kazoo_delete_rates(svc, worker["count"], parallelism)
        broker = broker_consume_ack_rate(svc, worker["count"])
    slower = min(kazoo["pairs"], broker)
    return {
        "bench": "worker_throughput",
        "count": worker["count"],
        "topics": topics,
        "parallelism": parallelism,
        "batch_size": batch_size,
        "worker_seconds": worker["seconds"],
        "worker_per_second": worker["per_second"],
        "worker_outcomes": worker["outcomes"],
        "worker_one_at_a_time_per_second": one_at_a_time["per_second"],
        "correct": worker["correct"] and one_at_a_time["correct"],
        "raw_kazoo_delete_per_second": kazoo["sync"],
        "raw_kazoo_delete_threads_per_second": kazoo["threads"],
        "raw_kazoo_delete_pipelined_per_second": kazoo["async"],
        "raw_kazoo_read_delete_pairs_pipelined_per_second": kazoo["pairs"],
        "raw_broker_consume_ack_per_second": broker,
        "slower_raw_per_second": slower,
        "ratio_to_slower_raw": worker["per_second"] / slower,
        "target_ratio": TARGET_RATIO,
        "target_met": worker["per_second"] >= TARGET_RATIO * slower,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser("worker_throughput", __doc__)
    args.add_argument("--count", type=int, help="pending deletions (default 5000, quick 300)")
    args.add_argument("--parallelism", type=int, default=4)
    args.add_argument("--batch-size", type=int, default=128)
    args.add_argument("--topics", type=int, default=20)
    options = args.parse_args(argv)
    quiet()
    count = options.count or (300 if options.quick else 5000)
    result = run(count, options.parallelism, options.batch_size, options.topics, options.workdir)
    console = console_for(options.json)
    n = result["count"]
    render(
        f"Worker throughput: {n:,} pending deletions, parallelism {result['parallelism']}",
        ["what", "per second", "seconds for N"],
        [
            (
                f"worker: fully handled (check, delete, ack), batches of {result['batch_size']}",
                result["worker_per_second"],
                result["worker_seconds"],
            ),
            (
                "worker: one message at a time (batch size 1)",
                result["worker_one_at_a_time_per_second"],
                n / result["worker_one_at_a_time_per_second"],
            ),
            (
                "raw kazoo delete, 1 caller",
                result["raw_kazoo_delete_per_second"],
                n / result["raw_kazoo_delete_per_second"],
            ),
            (
                f"raw kazoo delete, {result['parallelism']} threads",
                result["raw_kazoo_delete_threads_per_second"],
                n / result["raw_kazoo_delete_threads_per_second"],
            ),
            (
                "raw kazoo delete, pipelined",
                result["raw_kazoo_delete_pipelined_per_second"],
                n / result["raw_kazoo_delete_pipelined_per_second"],
            ),
            (
                "raw kazoo ledger read + versioned delete, pipelined (the limit)",
                result["raw_kazoo_read_delete_pairs_pipelined_per_second"],
                n / result["raw_kazoo_read_delete_pairs_pipelined_per_second"],
            ),
            (
                "raw broker consume-and-ack",
                result["raw_broker_consume_ack_per_second"],
                n / result["raw_broker_consume_ack_per_second"],
            ),
        ],
        console,
    )
    verdict = "met" if result["target_met"] else "NOT met"
    console.print(
        f"worker / min(pipelined read+delete pairs, consume-and-ack) = "
        f"{result['ratio_to_slower_raw']:.2f} "
        f"(target >= {TARGET_RATIO}: {verdict}); outcomes {result['worker_outcomes']}; "
        f"exactly the released ledgers deleted: {result['correct']}"
    )
    return finish(result, options.json)


if __name__ == "__main__":
    main()
