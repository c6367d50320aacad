"""The steps `bench.worker_throughput` times, each in a fresh forked child process: every
side starts from the same state (no client, thread or garbage left by an earlier step), and
the child's peak RSS (ru_maxrss, which only ever grows in a process) is that step's own. It
covers the bench's Python process only (the worker or raw client, with the Pulsar C++ client
and kazoo in it), not the ZooKeeper or broker processes; a child starts from the parent's
imports, reported as `rss_before_mb`.
"""

from __future__ import annotations

import io
import json
import logging
import resource
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import fastavro
import pulsar

from bench import children
from bench._common import (
    Seeded,
    Services,
    create_ledgers,
    enqueue_then_commit,
    ledger_znode,
    pending,
    remaining,
    seed,
    timed,
    topics_over,
)
from bench.cpu import CpuSpan
from config import ServiceConfiguration
from consumers.observer import Observer
from deletion.adapters.stores import zookeeper_multi_delete as multi_delete
from deletion.adapters.stores.zookeeper_multiread import OPS_PER_REQUEST, multi_read_async
from deletion.domain import message
from deletion.domain.deleter import Candidate, LedgerDeleter
from deletion.domain.message import LedgerComponent
from deletion.domain.message_properties import DELAY_TIME
from deletion.domain.outcome import Outcome, Result
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from ledger_janitor import logs
from ledger_janitor.sidecar.run import freeze_heap
from ledger_janitor.sidecar.wiring import Sidecar, open_sidecar

WINDOW = 2000  # requests in flight at once in the pipelined raw runs
MULTI = 1000  # deletes per multi request in the raw run that batches them


class Counted(Observer):
    """Wakes the bench once `count` messages are handled, and not before: a waiter woken on
    every result would take the GIL from the worker it is timing."""

    def __init__(self, count: int) -> None:
        self._left = count
        self._lock = threading.Lock()
        self.done = threading.Event()

    def on_handled_batch(
        self, handled: Sequence[tuple[NamespaceName, Result]], seconds: float
    ) -> None:
        with self._lock:
            self._left -= len(handled)
            if self._left <= 0:
                self.done.set()


def worker_rate(
    svc: Services, chroot: str, count: int, topics: int, parallelism: int, batch_size: int
) -> dict[str, Any]:
    """The worker handling `count` enqueued, committed, unreferenced ledgers: timed from
    start() to the last result."""
    sidecar = open_sidecar(
        worker_config(svc, chroot, parallelism, batch_size), client_log=svc.root / "client.log"
    )
    try:
        seeded = seed_pending_deletions(sidecar, count, topics)
        released = {i for entry in seeded for i in entry.released}
        counted = Counted(len(released))
        worker = sidecar.worker(observers=[counted], refresh_interval_seconds=1.0)
        freeze_heap()  # as `run` does before it starts the worker
        span = CpuSpan.start()
        worker.start()
        if not counted.done.wait(600):
            raise RuntimeError(f"the worker did not finish: {worker.stats.summary()}")
        spent = span.figures(len(released))
        worker.stop()
        left = remaining(sidecar.metadata)
        referenced = set().union(*(entry.referenced() for entry in seeded))
        return {
            "per_second": len(released) / spent["seconds"],
            "outcomes": worker.stats.summary(),
            "correct": not (left & released) and referenced <= left,
            **spent,
        }
    finally:
        sidecar.close()


def worker_logged_rate(
    svc: Services, chroot: str, count: int, topics: int, parallelism: int, batch_size: int
) -> dict[str, Any]:
    """The worker as in `worker_rate`, logging as `ledger-janitor run` does by default: INFO,
    a `worked` summary line every 10 s (consumers/log_summary.py), here to a file (this forked
    child's configuration only)."""
    path = svc.root / f"worker-logged{chroot.replace('/', '-')}.log"
    with path.open("w") as stream:
        logs.configure(logging.INFO, json_output=True, stream=stream)
        logging.getLogger("kazoo").setLevel(logging.ERROR)  # as quiet(): no reconnect chatter
        figures = worker_rate(svc, chroot, count, topics, parallelism, batch_size)
    logs.flush()
    lines = path.read_text().splitlines()
    said = [json.loads(line) for line in lines if '"event": "worked"' in line]
    return {
        **figures,
        # The worker's own lines (phase one's seeding logs each enqueue before it starts).
        "log_lines": sum('"logger": "consumers.' in line for line in lines),
        "summary_lines": len(said),
        "deletions_in_summaries": sum(line["deleted"] for line in said),
    }


def worker_config(
    svc: Services, chroot: str, parallelism: int, batch_size: int
) -> ServiceConfiguration:
    return svc.config(
        chroot,
        ledger_deletion_worker_threads_of_two_phase_deletion=parallelism,
        ledger_deletion_batch_size_of_two_phase_deletion=batch_size,
    )


def seed_pending_deletions(sidecar: Sidecar, count: int, topics: int) -> list[Seeded]:
    """`count` unreferenced ledgers over `topics` topics in 4 namespaces, each enqueued by
    phase one and dropped by its commit: what the worker and the bare loop both handle."""
    client = sidecar.metadata.client  # type: ignore[attr-defined]
    seeded = seed(client, sidecar.metadata, topics_over(4, topics), count // topics)
    enqueue_then_commit(sidecar, seeded)
    return seeded


def worker_receive_rate(
    svc: Services, chroot: str, count: int, topics: int, parallelism: int, batch_size: int
) -> dict[str, Any]:
    """A diagnostic, not the product: the worker as in `worker_rate`, but each batch's check,
    ledger read and delete answered at once ("deleted"), so what is timed is receiving,
    decoding, acking and observing alone. Patched in this forked child only."""

    def answered(self: LedgerDeleter, batch: Sequence[Candidate], dry_run: bool = False) -> Any:
        return [Result(Outcome.DELETED, "answered at once", c.info) for c in batch]

    LedgerDeleter.decide = answered  # type: ignore[method-assign]
    figures = worker_rate(svc, chroot, count, topics, parallelism, batch_size)
    return {"per_second": figures["per_second"], "outcomes": figures["outcomes"]}


def raw_work_rate(
    svc: Services, chroot: str, count: int, topics: int, batch_size: int
) -> dict[str, float]:
    """The worker's work done by a bare loop, with none of the product's checks, on the same
    seeded ledgers and enqueued messages as `worker_rate`. Two consumers a namespace each
    receive a batch, read the ledger ids out of the records and send one multiRead of their
    znodes; its answer sends one multi deleting them at the versions read, and that one's
    answer acks the messages (kazoo's callbacks), with up to RAW_BATCHES_IN_FLIGHT batches
    in flight; the requests built as the worker builds them (`multi_read_async`,
    `zookeeper_multi_delete.send`): the fastest way found for this work here, where the
    broker, ZooKeeper and the client share the cores. Timed from the subscribing to the last
    ack, with the CPU that span used."""
    sidecar = open_sidecar(svc.config(chroot), client_log=svc.root / "client.log")
    try:
        seeded = seed_pending_deletions(sidecar, count, topics)
    finally:
        sidecar.close()
    namespaces = sorted({entry.topic.namespace for entry in seeded})
    zookeeper = svc.kazoo(chroot)
    broker = pulsar.Client(
        svc.broker.service_url,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(svc.root / "raw-client.log")),
    )
    loop = _BareLoop(zookeeper, sum(len(entry.released) for entry in seeded))
    try:
        span = CpuSpan.start()
        for namespace in namespaces * 2:
            consumer = broker.subscribe(
                [namespace.deletion_topic, namespace.retry_topic],
                SUBSCRIPTION,
                consumer_type=pulsar.ConsumerType.Shared,
                receiver_queue_size=100,
                batch_receive_policy=pulsar.ConsumerBatchReceivePolicy(batch_size, -1, 200),
                initial_position=pulsar.InitialPosition.Earliest,
            )
            threading.Thread(target=loop.drain, args=(consumer,), daemon=True).start()
        if not loop.done.wait(600):
            raise RuntimeError(f"only {loop.handled} of {loop.total} handled")
        spent = span.figures(loop.total)
        return {"per_second": loop.total / spent["seconds"], **spent}
    finally:
        loop.done.set()
        time.sleep(0.3)  # the receivers' batch wait, so none is mid-receive at the close
        broker.close()
        zookeeper.stop()
        zookeeper.close()


RAW_BATCHES_IN_FLIGHT = 8


class _BareLoop:
    def __init__(self, zookeeper: Any, total: int) -> None:
        self._zookeeper, self.total, self.handled = zookeeper, total, 0
        self._in_flight = threading.Semaphore(RAW_BATCHES_IN_FLIGHT)
        self._lock = threading.Lock()
        self.done = threading.Event()

    def drain(self, consumer: Any) -> None:
        while not self.done.is_set():
            received = consumer.batch_receive()
            if not received:
                continue
            self._in_flight.acquire()
            paths = [bk.ledger_path(self._ledger_id(m.data())) for m in received]
            reads = multi_read_async(self._zookeeper, paths)
            reads.rawlink(partial(self._delete, consumer, received, paths))

    @staticmethod
    def _ledger_id(data: bytes) -> int:
        record: Any = fastavro.schemaless_reader(io.BytesIO(data), message.SCHEMA, None)
        return int(record["ledgerId"])

    def _delete(self, consumer: Any, received: list[Any], paths: list[str], reads: Any) -> None:
        nodes = reads.get()
        versions = [(path, node.stat.version) for path, node in zip(paths, nodes, strict=True)]
        (multi,) = multi_delete.send(self._zookeeper, versions)  # as the worker sends them
        multi.reply.rawlink(partial(self._ack, consumer, received))

    def _ack(self, consumer: Any, received: list[Any], deletes: Any) -> None:
        if not all(result is True for result in deletes.get()):
            raise RuntimeError("a raw delete failed")
        for m in received:
            consumer.acknowledge(m)
        self._in_flight.release()
        with self._lock:
            self.handled += len(received)
            if self.handled >= self.total:
                self.done.set()


def kazoo_rate(svc: Services, way: str, chroot: str, count: int, parallelism: int) -> float:
    """`count` znodes of BookKeeper's layout and size deleted one way: `sync` (one caller),
    `threads`, `async` (pipelined), `pairs` (a read, then a delete at the version read, both
    pipelined), `pairs-multi` (the reads pipelined, the deletes in multi requests) or
    `pairs-multiread` (the reads in multiRead requests, the deletes in multi requests)."""
    data = ledger_znode(TopicName(NamespaceName("raw", "ns"), "t"), LedgerComponent.MANAGED_LEDGER)
    paths = [bk.ledger_path(i) for i in range(1, count + 1)]
    client = svc.kazoo()
    client.ensure_path(chroot)
    client.stop()
    client.close()
    scoped = svc.kazoo(chroot)
    try:
        create_ledgers(scoped, [(i, data) for i in range(1, count + 1)])
        _, seconds = timed(partial(_delete, way, scoped, paths, parallelism))
    finally:
        scoped.stop()
        scoped.close()
    return count / seconds


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
            stats = _read_stats(client, window, by_multiread=way == "pairs-multiread")
            versions = list(zip(window, (stat.version for stat in stats), strict=True))
            _delete_at(client, versions, multi=way != "pairs")


def _read_stats(client: Any, paths: list[str], by_multiread: bool) -> list[Any]:
    """The znodes' stats, read pipelined: one get each, or multiRead requests of 200."""
    if not by_multiread:
        return [read.get()[1] for read in [client.get_async(p) for p in paths]]
    chunks = [paths[i : i + OPS_PER_REQUEST] for i in range(0, len(paths), OPS_PER_REQUEST)]
    replies = [multi_read_async(client, chunk) for chunk in chunks]
    return [node.stat for reply in replies for node in reply.get()]


def _delete_at(client: Any, versions: list[tuple[str, int]], multi: bool) -> None:
    if not multi:
        for result in [client.delete_async(path, version=v) for path, v in versions]:
            result.get()
        return
    replies = []
    for start in range(0, len(versions), MULTI):
        transaction = client.transaction()
        for path, version in versions[start : start + MULTI]:
            transaction.delete(path, version)
        replies.append(transaction.commit_async())
    for reply in replies:
        assert all(result is True for result in reply.get())


def broker_consume_ack_rate(svc: Services, namespace: NamespaceName, count: int) -> float:
    """Produce N messages like phase one's, then consume and ack them as the worker does:
    the same kind of subscription (Shared, partitioned deletion and retry topics, one
    listener thread)."""
    client = pulsar.Client(
        svc.broker.service_url,
        message_listener_threads=1,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(svc.root / "raw-client.log")),
    )
    try:
        payload = message.encode(pending(TopicName(namespace, "t"), 2**40))
        # Blocking when the send queue is full: a send refused (ProducerQueueIsFull) would
        # leave a message never to be consumed, and the wait below hanging.
        producer = client.create_producer(
            namespace.deletion_topic, batching_enabled=False, block_if_queue_full=True
        )
        failed: list[Any] = []
        for _ in range(count):
            producer.send_async(
                payload,
                lambda result, _id: failed.append(result) if result != pulsar.Result.Ok else None,
                properties={DELAY_TIME: "0"},
            )
        producer.flush()
        if failed:
            raise RuntimeError(f"{len(failed)} of {count} sends failed: {failed[0]}")
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


def in_child(function: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """`function(*args)` in a fresh forked process: its value (a rate, or a dict with
    `per_second`), with that child's RSS at its start and at its peak."""
    figures: dict[str, Any] = children.in_child(_measured, function, args)
    return figures


def _measured(function: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    before = _peak_rss_mb()
    value = function(*args)
    figures = value if isinstance(value, dict) else {"per_second": value}
    # A step that measured processes of its own (the sidecars) reports their peak instead.
    return {"rss_before_mb": before, "peak_rss_mb": _peak_rss_mb(), **figures}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
