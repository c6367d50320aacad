"""Concurrent deletions of one ledger: exactly one deletes it, the others see it gone."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory, Recorder
from tests.reliability.oracle import GroundTruth, pending
from tests.reliability.scenario import raw_for


def test_racing_deletes_of_one_ledger_succeed_exactly_once(backend: Backend) -> None:
    ledger_id = backend.factory.create_ledger({"application": b"pulsar"})
    version = backend.ledgers.ledger(ledger_id)
    assert version is not None
    start = threading.Barrier(8)

    def delete() -> bool:
        start.wait()
        return backend.ledgers.delete_ledger(ledger_id, version.version)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: delete(), range(8)))
    assert sorted(results) == [False] * 7 + [True]
    assert not backend.exists(ledger_id)


def test_two_workers_with_duplicate_messages_delete_once(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    truth = GroundTruth(janitor.backend.metadata, janitor.backend.factory)
    seeded = truth.seed(TopicName(namespace, "dup"), 3, ("sub", "reader"), schema_versions=1)
    target = seeded.ledgers[0]
    duplicates = [pending(seeded.topic, target)] * 6
    janitor.sidecar().phase_one.enqueue_then_commit(
        duplicates, lambda: truth.release(seeded.topic, [target])
    )
    recorder = Recorder()  # both workers report here
    # One client for both: pulsar-lite refuses a second connection's consumer whose
    # per-connection id collides with another's. Each worker has its own cache and consumers.
    sidecar = janitor.sidecar()
    workers = [sidecar.worker(observers=[recorder], refresh_interval_seconds=0.2) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        recorder.wait_for(lambda _: len(recorder.of(target)) == 6)
    finally:
        for worker in workers:
            worker.stop()
    assert sorted(o.value for o in recorder.of(target)) == ["already_gone"] * 5 + ["deleted"]
    raw = raw_for(janitor.backend)
    assert set(truth.owner) - raw.alive() == {target}
    assert raw.deletions() in (None, [target])  # once, where the store logs deletions
