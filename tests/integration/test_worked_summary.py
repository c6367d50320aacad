"""What `run` says while it works, as an operator reads its log (a pod's log: stderr, off a
terminal): at the default level one `worked` line a period, naming the ledgers it deleted
when they are few, and no line a message; with `-v`, each message's outcome at debug level
too. Every deletion still counts in the metrics.

Run as an operator runs it: `ledger-janitor run` in a process of its own, next to a store
whose pending deletions are due."""

from __future__ import annotations

import uuid
from functools import partial
from pathlib import Path

import pytest

from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory
from harness.process import wait_until
from harness.pulsar_lite import skip_consumer_ids
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder, pending
from tests.integration.run_rig import running, settings


@pytest.mark.parametrize("verbose", [False, True], ids=["default", "verbose"])
def test_the_default_log_says_a_worked_line_and_verbose_each_message(
    sqlite_store: Backend, broker: EmbeddedBroker, tmp_path: Path, verbose: bool
) -> None:
    ns = NamespaceName(f"t{uuid.uuid4().hex[:10]}", "orders")
    seeder = TopicSeeder(sqlite_store.metadata, sqlite_store.factory)
    seeded = seeder.seed(TopicName(ns, "events"), ledgers=4)
    released = seeded.ledgers[:2]
    janitor = JanitorFactory(sqlite_store, broker.service_url, tmp_path)
    try:
        sidecar = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=1)
        skip_consumer_ids(sidecar.client, 100)  # pulsar-lite: ids apart from the run's
        sidecar.phase_one.enqueue_then_commit(
            [pending(seeded.topic, ledger) for ledger in released],
            partial(seeder.release, seeded, released),
        )
        args = ("--metadata-store", sqlite_store.metadata_url, "--broker-url", broker.service_url)
        flags = ("-v",) if verbose else ()
        due = settings(deletionNamespaces=ns, sendDelaySecondsOfTwoPhaseDeletion=1)
        with running(*args, *flags, *due) as run:
            wait_until(lambda: not any(map(sqlite_store.exists, released)), 60, "the deletions")
            labels = {"namespace": str(ns), "component": "MANAGED_LEDGER", "ledger_type": "LEDGER"}
            counted = partial(run.sample, "ledger_janitor_ledgers_deleted_total", **labels)
            wait_until(lambda: counted() == 2, 30, "the metric counting both")
            run.terminate()  # the period is said when the worker stops, at the latest
    finally:
        janitor.close()
    events = run.events()
    (worked,) = [e for e in events if e["event"] == "worked"]
    assert worked["level"] == "info"
    assert (worked["deleted"], worked["deleted_ledgers"]) == (2, sorted(released))
    assert worked["namespaces"] == [str(ns)] and worked["archived"] == 0
    per_message = [e for e in events if e["event"] == "deleted"]
    if verbose:
        assert sorted(e["ledger_id"] for e in per_message) == sorted(released)
        assert {e["level"] for e in per_message} == {"debug"}
        assert all(e["topic"] == str(seeded.topic) for e in per_message)
    else:
        assert per_message == [], per_message
