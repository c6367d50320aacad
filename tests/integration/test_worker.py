"""Worker mechanics against the real broker: discovery, bounded parallelism, batches, the
producer pool."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulsar
import pytest

from consumers.handler import DeletionHandler
from consumers.worker import DeletionWorker
from core.clock import EpochSeconds
from deletion.domain.outcome import Outcome
from deletion.domain.ports import ANY_VERSION, Deletion, LedgerRecord, LedgerStorage
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory, Recorder
from harness.process import wait_until
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder, pending
from producers import ProducerPool


def _one_deleted(janitor: JanitorFactory, namespace: NamespaceName, recorder: Recorder) -> None:
    """A ledger of a new topic in `namespace` enqueued, released, and then deleted."""
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "late"), ledgers=2)
    target = seeded.ledgers[0]
    janitor.sidecar().phase_one.enqueue_then_commit(
        [pending(seeded.topic, target)], lambda: seeder.release(seeded, [target])
    )
    recorder.wait_for(lambda rs: recorder.of(target) == [Outcome.DELETED])


def test_worker_subscribes_to_a_namespace_registered_after_it_started(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    recorder = Recorder()
    worker = janitor.worker(recorder)
    assert namespace not in worker.subscribed
    _one_deleted(janitor, namespace, recorder)
    assert namespace in worker.subscribed


def test_a_namespace_is_received_by_a_thread_of_its_own_and_stop_ends_every_thread(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    before = set(threading.enumerate())
    recorder = Recorder()
    worker = janitor.worker(recorder)
    _one_deleted(janitor, namespace, recorder)
    names = ("receive-", "deletion-", "early-gate", "subscriptions")  # not kazoo's own
    started = [t for t in set(threading.enumerate()) - before if t.name.startswith(names)]
    assert f"receive-{namespace}" in {thread.name for thread in started}
    assert len(started) >= 4  # a receiver, a handler, the early gate, the subscriber
    worker.stop(timeout=5)
    assert not [thread.name for thread in started if thread.is_alive()]


def test_a_batch_that_fails_on_arrival_goes_back_and_the_receiving_goes_on(
    janitor: JanitorFactory, namespace: NamespaceName, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug while a received batch is sorted into due and early is the batch's only: it is
    negatively acked (the broker delivers it again later), and the namespace's receiving
    thread lives on to receive the next."""
    arrival = DeletionHandler.arrival
    failed: list[object] = []

    def fails_once(handler: DeletionHandler, consumer: Any, received: Any) -> Any:
        if not failed:
            failed.append(received)
            raise RuntimeError("a bug on arrival")
        return arrival(handler, consumer, received)

    monkeypatch.setattr(DeletionHandler, "arrival", fails_once)
    recorder = Recorder()
    worker = janitor.worker(recorder)
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "arrivals"), ledgers=3)
    first, second = seeded.ledgers[:2]
    phase_one = janitor.sidecar().phase_one
    phase_one.enqueue_then_commit(
        [pending(seeded.topic, first)], lambda: seeder.release(seeded, [first])
    )
    wait_until(lambda: bool(failed), 30, "the first batch failing on arrival")
    phase_one.enqueue_then_commit(
        [pending(seeded.topic, second)], lambda: seeder.release(seeded, [second])
    )
    recorder.wait_for(lambda rs: recorder.of(second) == [Outcome.DELETED])
    assert worker.live()[0], worker.live()


class GatedStorage(LedgerStorage):
    """Blocks every batch of deletes until released, counting how many run at once."""

    def __init__(self, real: LedgerStorage) -> None:
        self._real = real
        self.in_flight = 0
        self.most = 0
        self.sizes: list[int] = []
        self.changed = threading.Condition()
        self.release = threading.Event()

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        return self._real.ledger(ledger_id)

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        return self._real.delete_ledger(ledger_id, expected_version)

    def delete_ledgers(self, versions: Mapping[int, int]) -> dict[int, Deletion]:
        with self.changed:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self.sizes.append(len(versions))
            self.changed.notify_all()
        self.release.wait(30)
        with self.changed:
            self.in_flight -= 1
        return self._real.delete_ledgers(versions)

    def close(self) -> None:
        self._real.close()


def _gated_worker(
    janitor: JanitorFactory, namespace: NamespaceName, released: int, parallelism: int, batch: int
) -> tuple[GatedStorage, Recorder, DeletionWorker]:
    """A worker over `released` pending deletions whose every batch of deletes blocks."""
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "wide"), ledgers=released + 2)
    ids = seeded.ledgers[:released]
    janitor.sidecar().phase_one.enqueue_then_commit(
        [pending(seeded.topic, i) for i in ids], lambda: seeder.release(seeded, ids)
    )
    sidecar = janitor.sidecar(
        ledger_deletion_worker_threads_of_two_phase_deletion=parallelism,
        ledger_deletion_batch_size_of_two_phase_deletion=batch,
    )
    gated = GatedStorage(sidecar.ledgers)
    sidecar.ledgers = gated
    recorder = Recorder()
    worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.2)
    return gated, recorder, worker


def test_parallelism_bounds_concurrent_batches(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    gated, recorder, worker = _gated_worker(janitor, namespace, 8, parallelism=3, batch=1)
    worker.start()
    try:
        with gated.changed:
            assert gated.changed.wait_for(lambda: gated.in_flight == 3, 30)
            # With every handler blocked, a fourth may not start.
            assert not gated.changed.wait_for(lambda: gated.in_flight > 3, 0.5)
        gated.release.set()
        recorder.wait_for(lambda rs: len(rs) == 8)
    finally:
        gated.release.set()
        worker.stop()
    assert gated.most == 3
    assert recorder.count(Outcome.DELETED) == 8


def test_a_backlog_is_handled_in_batches_of_at_most_the_batch_size(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    """While the only handler is blocked, the due messages are received into its queue a
    batch at a time; released, it handles each batch with one multiRead and one multi of
    deletes, and no batch is larger than the batch size."""
    gated, recorder, worker = _gated_worker(janitor, namespace, 9, parallelism=1, batch=4)
    worker.start()
    try:
        with gated.changed:
            assert gated.changed.wait_for(lambda: gated.in_flight == 1, 30)
        wait_until(lambda: worker.stats.received >= 5, 30, "a backlog behind the blocked batch")
        assert recorder.count(Outcome.DELETED) == 0
        gated.release.set()
        recorder.wait_for(lambda rs: len(rs) == 9)
    finally:
        gated.release.set()
        worker.stop()
    assert recorder.count(Outcome.DELETED) == 9
    assert sum(gated.sizes) == 9 and max(gated.sizes) == 4, gated.sizes


def test_producer_pool_is_bounded_and_closes_the_least_recently_used(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    client = pulsar.Client(
        broker.service_url,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(tmp_path / "c.log")),
    )
    pool = ProducerPool(client, max_producers=2)
    try:
        topics = [f"persistent://pool{i}/ns/__ledger_deletion" for i in range(3)]
        for topic in [*topics, topics[0]]:
            assert pool.send(topic, b"x", {}).result(10) is not None
        assert len(pool) == 2
    finally:
        pool.close()
        client.close()


class FakeClock:
    """The worker's clock, moved only by the test."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> EpochSeconds:
        return EpochSeconds(self.now)


def test_an_early_message_is_held_until_due_by_the_worker_clock(
    embedded: JanitorFactory, namespace: NamespaceName
) -> None:
    """pulsar-lite delivers at once whatever the delay: the worker's own gate must hold the
    message, unacked and unhandled, until its clock reaches publish time + delay."""
    delay = 3600
    clock = FakeClock(time.time())
    seeder = TopicSeeder(embedded.backend.metadata, embedded.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "early"), ledgers=2)
    target = seeded.ledgers[0]
    sidecar = embedded.sidecar(send_delay_seconds_of_two_phase_deletion=delay)
    sidecar.phase_one.enqueue_then_commit(
        [pending(seeded.topic, target)], lambda: seeder.release(seeded, [target])
    )
    recorder = Recorder()
    worker = sidecar.worker(clock=clock, observers=[recorder], refresh_interval_seconds=0.2)
    worker.start()
    try:
        wait_until(lambda: worker.stats.held_early == 1, 15, "the message held by the gate")
        assert recorder.results == []
        assert embedded.backend.exists(target)
        clock.now = time.time() + delay + 60  # past publish time + delay
        recorder.wait_for(lambda rs: recorder.of(target) == [Outcome.DELETED])
    finally:
        worker.stop()
    assert not embedded.backend.exists(target)
    assert worker.stats.received == 1 and worker.stats.handed_back == 0
