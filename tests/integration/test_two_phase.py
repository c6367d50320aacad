"""Two-phase deletion end to end: real broker, real ZooKeeper or SQLite, real worker."""

from __future__ import annotations

import time

import pulsar
import pytest

from core.errors import EnqueueError
from deletion.domain import message_properties as props
from deletion.domain.message import LedgerComponent, encode
from deletion.domain.outcome import Outcome
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from harness.janitor import JanitorFactory, Recorder
from tests.reliability.oracle import GroundTruth, ml_path, pending
from tests.reliability.raw_ledgers import RawLedgers
from tests.reliability.scenario import raw_for


def _topic(namespace: NamespaceName, local: str = "orders-partition-1") -> TopicName:
    return TopicName(namespace, local)


def _seeder(janitor: JanitorFactory) -> GroundTruth:
    return GroundTruth(janitor.backend.metadata, janitor.backend.factory)


def _raw(janitor: JanitorFactory) -> RawLedgers:
    return raw_for(janitor.backend)


def test_released_ledger_is_deleted_after_the_delay_and_not_before(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    seeded = seeder.seed(_topic(namespace), ledgers=4)
    released = seeded.ledgers[:2]
    producer = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=2)
    before_send = time.time()
    producer.phase_one.enqueue_then_commit(
        [pending(seeded.topic, i) for i in released], lambda: seeder.release(seeded.topic, released)
    )
    janitor.worker(recorder, send_delay_seconds_of_two_phase_deletion=2)

    recorder.wait_for(lambda rs: sum(r.outcome is Outcome.DELETED for r in rs) == 2)
    alive = _raw(janitor).alive()
    assert not set(released) & alive
    assert seeded.referenced() <= alive
    # The embedded broker ignores delays: the worker itself held the messages back.
    assert len(recorder.results) == 2
    assert min(recorder.times) >= before_send + 2.0


def test_ledger_in_use_is_reconsumed_then_archived_with_java_retry_properties(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    seeded = seeder.seed(_topic(namespace), ledgers=3)
    still_used = seeded.ledgers[1]
    # A crash after the send but before the metadata commit: the ledger stays referenced.
    janitor.sidecar().phase_one.enqueue([pending(seeded.topic, still_used)])
    janitor.worker(recorder, max_reconsume_times_of_two_phase_deletion=10)

    recorder.wait_for(lambda rs: any(r.outcome is Outcome.ARCHIVED for r in rs), timeout=60)
    assert recorder.of(still_used) == [Outcome.RECONSUMED] * 10 + [Outcome.ARCHIVED]
    assert recorder.results[-1].reason.startswith("gave up after 10 reconsumes")
    assert still_used in _raw(janitor).alive()
    archived = _drain(janitor, namespace.archive_topic, 1)[0]
    properties = archived.properties()
    assert properties[props.RECONSUME_TIMES] == "11"
    assert properties[props.DELAY_TIME] == "1000"
    # Java's REAL_TOPIC: the partitioned topic, without the partition it arrived on.
    assert properties[props.REAL_TOPIC] == namespace.deletion_topic
    assert properties[props.ORIGIN_MESSAGE_ID].count(":") == 2
    assert properties[props.ORIGIN_MESSAGE_ID_Y_TIME] == properties[props.ORIGIN_MESSAGE_ID]
    assert "still referenced" in properties[props.ARCHIVE_REASON]


def _drain(janitor: JanitorFactory, topic: str, count: int) -> list[pulsar.Message]:
    consumer = janitor.sidecar().client.subscribe(
        topic, "inspect", initial_position=pulsar.InitialPosition.Earliest
    )
    messages = [consumer.receive(10_000) for _ in range(count)]
    for received in messages:
        consumer.acknowledge(received)
    consumer.close()
    return messages


def test_a_topic_re_created_inside_the_cache_lifetime_keeps_its_new_ledger(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    """The worker caches 'topic absent' while deleting an old ledger of a deleted topic; the
    topic comes back with ledger L, and a trim's phase one for L crashes before its commit.
    L is referenced: it must never be deleted on the cached 'absent' snapshot."""
    seeder, recorder = _seeder(janitor), Recorder()
    topic = _topic(namespace, "t")
    old = seeder.seed(topic, ledgers=2).ledgers[0]
    seeder.delete_topic(topic)
    sidecar = janitor.sidecar()
    sidecar.phase_one.enqueue([pending(topic, old)])
    janitor.worker(
        recorder,
        in_use_ledgers_cache_ttl_seconds=600,
        min_ledger_age_seconds_of_two_phase_deletion=0,
    )
    recorder.wait_for(lambda rs: Outcome.DELETED in recorder.of(old))

    reborn = seeder.seed(topic, ledgers=1).ledgers[0]  # the topic is created again
    sidecar.phase_one.enqueue([pending(topic, reborn)])  # ... and the commit never comes

    recorder.wait_for(lambda rs: Outcome.ARCHIVED in recorder.of(reborn), timeout=60)
    assert Outcome.DELETED not in recorder.of(reborn)
    assert seeder.referenced() <= _raw(janitor).alive()


def test_stale_snapshot_never_deletes_a_newer_ledger(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    seeded = seeder.seed(_topic(namespace), ledgers=3)
    sidecar = janitor.sidecar()
    released = seeded.ledgers[0]
    sidecar.phase_one.enqueue_then_commit(
        [pending(seeded.topic, released)], lambda: seeder.release(seeded.topic, [released])
    )
    janitor.worker(recorder, in_use_ledgers_cache_ttl_seconds=600)
    recorder.wait_for(lambda rs: Outcome.DELETED in [r.outcome for r in rs])
    # The worker's snapshot is now cached for 10 minutes. The topic rolls a new ledger,
    # and a phase one for it "crashes" before its commit: the ledger stays referenced.
    newer = seeder.roll_over(seeded.topic)
    sidecar.phase_one.enqueue([pending(seeded.topic, newer)])

    recorder.wait_for(lambda rs: Outcome.ARCHIVED in recorder.of(newer))
    assert Outcome.DELETED not in recorder.of(newer)
    assert newer in _raw(janitor).alive()


def test_duplicate_messages_delete_once_and_both_are_acked(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    seeded = seeder.seed(_topic(namespace), ledgers=3)
    target = seeded.ledgers[0]
    sidecar = janitor.sidecar()
    sidecar.phase_one.enqueue_then_commit(
        [pending(seeded.topic, target)], lambda: seeder.release(seeded.topic, [target])
    )
    sidecar.phase_one.enqueue([pending(seeded.topic, target)])
    worker = janitor.worker(recorder)

    recorder.wait_for(lambda rs: len(recorder.of(target)) == 2)
    assert sorted(o.value for o in recorder.of(target)) == ["already_gone", "deleted"]
    worker.stop()
    # Both were acked: nothing is left for the subscription.
    leftover = janitor.sidecar().client.subscribe(
        [namespace.deletion_topic, namespace.retry_topic],
        SUBSCRIPTION,
        consumer_type=pulsar.ConsumerType.Shared,
    )
    with pytest.raises(pulsar.Timeout):
        leftover.receive(1500)
    leftover.close()


def test_cursor_ledger_rotation_deletes_the_old_cursor_ledger_only(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    seeded = seeder.seed(_topic(namespace, "with space:and%colon"), ledgers=2, schema_versions=1)
    old_cursor = seeded.cursors["sub"]
    sidecar = janitor.sidecar()
    sidecar.phase_one.enqueue_then_commit(
        [pending(seeded.topic, old_cursor, LedgerComponent.MANAGED_CURSOR)],
        lambda: seeder.rotate_cursor(seeded.topic, "sub"),
    )
    janitor.worker(recorder)
    recorder.wait_for(lambda rs: recorder.of(old_cursor) == [Outcome.DELETED])
    alive = _raw(janitor).alive()
    assert old_cursor not in alive
    assert seeded.referenced() <= alive


def test_undecodable_message_is_archived_intact_and_the_worker_keeps_going(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    seeded = seeder.seed(_topic(namespace), ledgers=2)
    sidecar = janitor.sidecar()
    garbage = b"\x02\xff\xfe not avro \x00"
    sidecar.registry.register(namespace)
    sidecar.pool.send(namespace.deletion_topic, garbage, {"k": "v"}).result(10)
    janitor.worker(recorder)
    recorder.wait_for(lambda rs: any(r.outcome is Outcome.ARCHIVED for r in rs))
    sidecar.phase_one.enqueue_then_commit(
        [pending(seeded.topic, seeded.ledgers[0])],
        lambda: seeder.release(seeded.topic, seeded.ledgers[:1]),
    )
    recorder.wait_for(lambda rs: any(r.outcome is Outcome.DELETED for r in rs))
    archived = _drain(janitor, namespace.archive_topic, 1)[0]
    assert archived.data() == garbage
    assert archived.properties()["k"] == "v"
    assert archived.properties()[props.ARCHIVE_REASON].startswith("undecodable message")


def test_message_naming_another_namespace_is_archived_not_deleted(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    victim = seeder.seed(_topic(NamespaceName(namespace.tenant + "x", "victim")), ledgers=3)
    target = victim.ledgers[0]
    seeder.release(victim.topic, [target])  # unreferenced now, but not this namespace's to delete
    sidecar = janitor.sidecar()
    sidecar.registry.register(namespace)
    sidecar.pool.send(namespace.deletion_topic, encode(pending(victim.topic, target)), {}).result(
        10
    )
    janitor.worker(recorder)

    recorder.wait_for(lambda rs: len(rs) == 1)
    assert recorder.results[0].outcome is Outcome.ARCHIVED
    assert "outside namespace" in recorder.results[0].reason
    assert target in _raw(janitor).alive()


def test_ledger_whose_metadata_names_another_topic_is_archived(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder, recorder = _seeder(janitor), Recorder()
    theirs = seeder.seed(_topic(namespace, "theirs"), ledgers=2)
    mine = seeder.seed(_topic(namespace, "mine"), ledgers=2)  # ids above the target: not stale
    target = theirs.ledgers[0]
    seeder.release(theirs.topic, [target])
    # `mine` never referenced the ledger, and the ledger's own metadata names `theirs`.
    janitor.sidecar().phase_one.enqueue([pending(mine.topic, target)])
    janitor.worker(recorder)

    recorder.wait_for(lambda rs: len(rs) == 1)
    assert recorder.results[0].outcome is Outcome.ARCHIVED
    assert "pulsar/managed-ledger" in recorder.results[0].reason
    assert target in _raw(janitor).alive()


def test_failed_send_never_commits_metadata(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    from ledger_janitor.demo.embedded import free_port

    seeder = _seeder(janitor)
    seeded = seeder.seed(_topic(namespace), ledgers=3)
    unreachable = janitor.sidecar(
        broker_service_url=f"pulsar://127.0.0.1:{free_port()}", operation_timeout_seconds=1
    )
    committed = []
    with pytest.raises(EnqueueError, match="metadata must not change"):
        unreachable.phase_one.enqueue_then_commit(
            [pending(seeded.topic, seeded.ledgers[0])], lambda: committed.append(True)
        )
    assert committed == []
    node = janitor.backend.metadata.get(ml_path(seeded.topic))
    assert node is not None and node.stat.version == seeded.version  # untouched
