"""Archive drains: filters, limits, requeueing, and two drains at once."""

from __future__ import annotations

import threading

import pulsar

from consumers.archive import DrainFilter
from consumers.archive_listing import list_archive
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent, PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory
from ledger_janitor.demo.seeding import SeededTopic, TopicSeeder, pending
from ledger_janitor.sidecar.wiring import Sidecar


def _archive(sidecar: Sidecar, infos: list[PendingDeleteLedgerInfo], reason: str) -> None:
    namespace = infos[0].topic_name.namespace
    for info in infos:
        properties = {
            props.ARCHIVE_REASON: reason,
            props.RECONSUME_TIMES: "11",
            props.ARCHIVE_TIME: "1",
        }
        sidecar.pool.send(namespace.archive_topic, message.encode(info), properties).result(10)


def _seed(
    janitor: JanitorFactory, namespace: NamespaceName, ledgers: int
) -> tuple[TopicSeeder, SeededTopic]:
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    return seeder, seeder.seed(TopicName(namespace, "t"), ledgers=ledgers)


def test_filters_and_limit_settle_only_what_they_select(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, seeded = _seed(janitor, namespace, ledgers=4)
    released = seeded.ledgers[:3]
    seeder.release(seeded, released)
    old_cursor = seeder.rotate_cursor(seeded)
    sidecar = janitor.sidecar()
    _archive(sidecar, [pending(seeded.topic, i) for i in released], "gave up: timeout")
    _archive(
        sidecar,
        [pending(seeded.topic, old_cursor, LedgerComponent.MANAGED_CURSOR)],
        "gave up: bookie down",
    )
    drain = sidecar.archive_drain()

    by_component = drain.drain(namespace, DrainFilter(component="managed_cursor"), dry_run=False)
    assert [(a.info.ledger_id, o) for a, o, _ in by_component if a.info] == [
        (old_cursor, Outcome.DELETED)
    ]
    by_reason = drain.drain(namespace, DrainFilter(reason="TIMEOUT", limit=2), dry_run=False)
    assert [o for _, o, _ in by_reason] == [Outcome.DELETED] * 2
    left = list_archive(sidecar.client, namespace)
    assert len(left) == 1 and left[0].reason == "gave up: timeout"
    assert sum(janitor.backend.exists(i) for i in released) == 1


def test_a_ledger_already_gone_is_reported_as_such_not_as_deleted(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, seeded = _seed(janitor, namespace, ledgers=3)
    freed, gone = seeded.ledgers[:2]
    seeder.release(seeded, [freed, gone])
    janitor.backend.ledgers.delete_ledger(gone)  # by someone else, before the drain
    sidecar = janitor.sidecar()
    _archive(sidecar, [pending(seeded.topic, i) for i in (freed, gone)], "gave up: timeout")
    drain = sidecar.archive_drain()
    dry = drain.drain(namespace, DrainFilter(), dry_run=True)
    assert sorted((a.info.ledger_id, o) for a, o, _ in dry if a.info) == [
        (freed, Outcome.WOULD_DELETE),
        (gone, Outcome.ALREADY_GONE),
    ]
    settled = drain.drain(namespace, DrainFilter(), dry_run=False)
    assert sorted((a.info.ledger_id, o, why) for a, o, why in settled if a.info) == [
        (freed, Outcome.DELETED, f"deleted ledger {freed} of {seeded.topic}"),
        (gone, Outcome.ALREADY_GONE, f"ledger {gone} is already gone"),
    ]
    assert not janitor.backend.exists(freed)


def test_unknown_or_stale_is_requeued_with_a_fresh_attempt_count(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    _, seeded = _seed(janitor, namespace, ledgers=2)
    # Above every ledger the topic's managed ledger recorded: it may still be creating it.
    owner = pulsar_custom_metadata(seeded.topic, LedgerComponent.MANAGED_LEDGER)
    newer = janitor.backend.factory.create_ledger(owner)
    sidecar = janitor.sidecar()
    _archive(sidecar, [pending(seeded.topic, newer)], "gave up: stale")
    peek = sidecar.client.subscribe(
        namespace.deletion_topic,
        "peek",
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    settled = sidecar.archive_drain().drain(namespace, DrainFilter(), dry_run=False)
    assert [(o, "may still be creating it" in why) for _, o, why in settled] == [
        (Outcome.REQUEUED, True)
    ]
    requeued = peek.receive(10_000)
    assert message.decode(requeued.data()).ledger_id == newer
    assert props.RECONSUME_TIMES not in requeued.properties()
    assert list_archive(sidecar.client, namespace, wait_seconds=1.0) == []
    assert janitor.backend.exists(newer)
    peek.close()


def test_two_drains_at_once_settle_each_message_once(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, seeded = _seed(janitor, namespace, ledgers=24)
    released = seeded.ledgers[:20]
    seeder.release(seeded, released)
    sidecar = janitor.sidecar()
    _archive(sidecar, [pending(seeded.topic, i) for i in released], "gave up: timeout")
    results: list[list[tuple[object, Outcome, str]]] = [[], []]

    def drain(slot: int) -> None:
        results[slot] = sidecar.archive_drain().drain(namespace, DrainFilter(), dry_run=False)  # type: ignore[assignment]

    threads = [threading.Thread(target=drain, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    settled = [a.info.ledger_id for slot in results for a, _, _ in slot]  # type: ignore[attr-defined]
    assert sorted(settled) == sorted(released)  # each exactly once, across both drains
    assert not any(janitor.backend.exists(i) for i in released)
