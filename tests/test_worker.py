"""Worker mechanics against the real broker: discovery, bounded parallelism, producer pool."""

from __future__ import annotations

import threading
from pathlib import Path

import pulsar

from consumers.handler import Outcome
from deletion.ports import ANY_VERSION, LedgerRecord, LedgerStorage
from deletion.topics import NamespaceName, TopicName
from ledger_janitor.embedded import EmbeddedBroker
from ledger_janitor.seeding import TopicSeeder, pending
from producers import ProducerPool

from .harness.janitor import JanitorFactory, Recorder


def test_worker_subscribes_to_a_namespace_registered_after_it_started(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    recorder = Recorder()
    worker = janitor.worker(recorder)
    assert namespace not in worker.subscribed
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "late"), ledgers=2)
    target = seeded.ledgers[0]
    janitor.sidecar().phase_one.enqueue_then_commit(
        [pending(seeded.topic, target)], lambda: seeder.release(seeded, [target])
    )
    recorder.wait_for(lambda rs: recorder.of(target) == [Outcome.DELETED])
    assert namespace in worker.subscribed


class GatedStorage:
    """Blocks every delete until released, counting how many run at once."""

    def __init__(self, real: LedgerStorage) -> None:
        self._real = real
        self.in_flight = 0
        self.most = 0
        self.changed = threading.Condition()
        self.release = threading.Event()

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        return self._real.ledger(ledger_id)

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        with self.changed:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self.changed.notify_all()
        self.release.wait(30)
        with self.changed:
            self.in_flight -= 1
        return self._real.delete_ledger(ledger_id, expected_version)

    def close(self) -> None:
        self._real.close()


def test_parallelism_bounds_concurrent_deletions(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "wide"), ledgers=10)
    released = seeded.ledgers[:8]
    janitor.sidecar().phase_one.enqueue_then_commit(
        [pending(seeded.topic, i) for i in released], lambda: seeder.release(seeded, released)
    )
    sidecar = janitor.sidecar(ledger_deletion_parallelism_of_two_phase_deletion=3)
    gated = GatedStorage(sidecar.ledgers)
    sidecar.ledgers = gated
    recorder = Recorder()
    worker = sidecar.worker(on_result=recorder, refresh_interval_seconds=0.2)
    worker.start()
    try:
        with gated.changed:
            assert gated.changed.wait_for(lambda: gated.in_flight == 3, 30)
            # With every handler blocked, a fourth may not start.
            assert not gated.changed.wait_for(lambda: gated.in_flight > 3, 0.5)
        gated.release.set()
        recorder.wait_for(lambda rs: len(rs) == len(released))
    finally:
        gated.release.set()
        worker.stop()
    assert gated.most == 3
    assert recorder.count(Outcome.DELETED) == len(released)


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
