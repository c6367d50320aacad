"""`ledger-janitor run` stops cleanly on SIGTERM mid-batch, and nothing is lost."""

from __future__ import annotations

from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory, Recorder
from harness.process import start_sidecar, stop_sidecar, wait_until
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder, pending

RELEASED = 600


def test_sigterm_mid_batch_loses_nothing(
    embedded: JanitorFactory, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    janitor, backend = embedded, embedded.backend
    seeder = TopicSeeder(backend.metadata, backend.factory)
    seeded = seeder.seed(TopicName(namespace, "busy"), ledgers=RELEASED + 2)
    released = seeded.ledgers[:RELEASED]
    phase_one = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=0).phase_one
    phase_one.enqueue_then_commit(
        [pending(seeded.topic, i) for i in released], lambda: seeder.release(seeded, released)
    )
    storage = backend.factory
    assert isinstance(storage, SqliteLedgerStorage)
    sidecar = start_sidecar(
        backend.metadata_url,
        broker.service_url,
        sendDelaySecondsOfTwoPhaseDeletion=0,
        ledgerDeletionWorkerThreadsOfTwoPhaseDeletion=2,
    )
    wait_until(lambda: len(storage.deletions()) > 0, 60, "the first deletion")
    stderr = stop_sidecar(sidecar)
    assert "stopped" in stderr
    deleted_by_first = len(storage.deletions())
    assert 0 < deleted_by_first < RELEASED, "SIGTERM did not land mid-batch"

    recorder = Recorder()
    janitor.worker(recorder, send_delay_seconds_of_two_phase_deletion=0)
    wait_until(lambda: len(storage.deletions()) == RELEASED, 60, "every released ledger deleted")
    deleted = [ledger for ledger, _ in storage.deletions()]
    assert sorted(deleted) == sorted(released)  # each exactly once, none referenced
    assert all(backend.exists(i) for i in seeded.referenced())
    assert recorder.count(Outcome.ARCHIVED) == 0
