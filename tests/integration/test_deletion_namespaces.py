"""`deletionNamespaces` limits: a sidecar piloted on one namespace works that one and no other,
and says so the same way in its start-up line, its log, its metrics and `archive list`.
Unset, it works every namespace with a deletion topic (tests/integration/test_namespaces.py).

Run as an operator runs it: `ledger-janitor run` in a process of its own, next to a store
holding two namespaces whose pending deletions are due."""

from __future__ import annotations

import uuid
from functools import partial
from pathlib import Path

import pulsar

from deletion.domain.message import decode
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory
from harness.process import run_cli, wait_until
from harness.pulsar_lite import skip_consumer_ids
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder, pending
from tests.integration.run_rig import running, settings


def test_a_sidecar_piloted_on_one_namespace_works_that_one_only(
    sqlite_store: Backend, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    tenant = f"t{uuid.uuid4().hex[:10]}"
    piloted, other = NamespaceName(tenant, "orders"), NamespaceName(tenant, "payments")
    seeder = TopicSeeder(sqlite_store.metadata, sqlite_store.factory)
    ours = seeder.seed(TopicName(piloted, "events"), ledgers=3)
    theirs = seeder.seed(TopicName(other, "events"), ledgers=3)
    ours_released, theirs_released = ours.ledgers[0], theirs.ledgers[0]
    janitor = JanitorFactory(sqlite_store, broker.service_url, tmp_path)
    try:
        sidecar = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=1)
        skip_consumer_ids(sidecar.client, 100)  # pulsar-lite: ids apart from the run's
        for seeded, released in ((ours, ours_released), (theirs, theirs_released)):
            # released and enqueued: due before `run` starts
            sidecar.phase_one.enqueue_then_commit(
                [pending(seeded.topic, released)], partial(seeder.release, seeded, [released])
            )
        args = ("--metadata-store", sqlite_store.metadata_url, "--broker-url", broker.service_url)
        with running(
            *args, *settings(deletionNamespaces=piloted, sendDelaySecondsOfTwoPhaseDeletion=1)
        ) as run:
            wait_until(lambda: not sqlite_store.exists(ours_released), 60, "the piloted deletion")
            watched = "ledger_janitor_watched_namespaces"
            wait_until(lambda: run.sample(watched) is not None, 30, "the gauges")
            assert run.sample(watched) == 1
            handled = "ledger_janitor_messages_received_total"
            assert run.sample(handled, namespace=str(piloted)) == 1
            assert run.sample(handled, namespace=str(other)) is None
            run.terminate()
        events = run.events()
        (start,) = [e for e in events if "starting:" in e["event"]]
        assert start["event"].endswith(f"namespaces {piloted}") and start["namespaces"] == [
            str(piloted)
        ]
        (running_line,) = [e for e in events if e["event"] == "worker running"]
        assert running_line["namespaces"] == [str(piloted)]
        subscribed = [e["topic"] for e in events if e["event"] == "subscribed"]
        assert subscribed == [piloted.deletion_topic]
        # The other namespace: its ledger alive, its pending deletion still waiting.
        assert sqlite_store.exists(theirs_released)
        waiting = sidecar.client.subscribe(
            other.deletion_topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared,
            initial_position=pulsar.InitialPosition.Earliest,
        )  # fmt: skip
        message = waiting.receive(30_000)
        assert decode(message.data()).ledger_id == theirs_released
        waiting.close()  # unacked: it stays for a sidecar that works the namespace
        # `archive list` without --namespace reads the same one namespace.
        listed = run_cli(
            "archive", "list", *args, "--set", f"deletionNamespaces={piloted}", "--wait", "1"
        )
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.strip() == f"nothing archived in {piloted}"
    finally:
        janitor.close()


def test_enqueue_outside_the_piloted_namespaces_says_no_sidecar_so_configured_works_it(
    sqlite_store: Backend, broker: EmbeddedBroker
) -> None:
    tenant = f"t{uuid.uuid4().hex[:10]}"
    result = run_cli(
        "enqueue", f"{tenant}/payments/events", "7",
        "--metadata-store", sqlite_store.metadata_url, "--broker-url", broker.service_url,
        "--set", f"deletionNamespaces={tenant}/orders",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"enqueued MANAGED_LEDGER LEDGER 7 of {tenant}/payments")
    (warning,) = [line for line in result.stderr.splitlines() if "deletionNamespaces" in line]
    assert f"namespace {tenant}/payments is not in deletionNamespaces ({tenant}/orders)" in warning
