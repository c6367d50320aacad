"""Phase one and the worker's topics on the real broker: the partitioned deletion topic and
its subscriptions made before the first send, surviving the broker's inactive-topic GC;
the broker itself holding delayed messages; reconsume-later through the real retry topic
and dead-lettering; the Avro schema in the real registry; a topic with another schema
refused with a clear message. The broker's admin API is the judge."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pulsar
import pytest
from kazoo.client import KazooClient

from core.errors import EnqueueError
from deletion.domain import message_properties as props
from deletion.domain.outcome import Outcome
from deletion.domain.topics import (
    ARCHIVE_SUBSCRIPTION,
    DELETION_TOPIC,
    SUBSCRIPTION,
    NamespaceName,
    TopicName,
)
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator
from harness.java import JavaPrograms
from harness.pulsar_admin import BrokerAdmin
from ledger_janitor.demo.seeding import pending
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar

AVSC = Path(__file__).parents[2] / "deletion" / "domain" / "pending_delete_ledger_info.avsc"


def test_the_topics_and_subscriptions_are_made_before_the_first_send_and_outlive_gc(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    client_log: Path,
) -> None:  # fmt: skip
    sidecar = rig.sidecar(real_pulsar, client_log, send_delay_seconds_of_two_phase_deletion=3600)
    try:
        topic = TopicName(real_namespace, "orders")
        sidecar.phase_one.enqueue([pending(topic, 123456789)])
        deletion = TopicName(real_namespace, DELETION_TOPIC)
        metadata = broker_admin.get(f"{broker_admin.topic_path(deletion)}/partitions")
        assert metadata["partitions"] == 4  # ledgerDeletionParallelismOfTwoPhaseDeletion
        # The broker deletes a topic without subscriptions once it is idle (every 5 s here):
        # wait through several of its sweeps, then everything is still there.
        time.sleep(16)
        stats = broker_admin.get(f"{broker_admin.topic_path(deletion)}/partitioned-stats")
        assert SUBSCRIPTION in stats["subscriptions"]
        assert stats["subscriptions"][SUBSCRIPTION]["msgBacklog"] == 1  # held, not lost
        topics = set(broker_admin.topics(real_namespace))
        assert real_namespace.retry_topic in topics
        assert real_namespace.archive_topic in topics
        for topic_name, subscription in (
            (real_namespace.retry_topic, SUBSCRIPTION),
            (real_namespace.archive_topic, ARCHIVE_SUBSCRIPTION),
        ):
            parsed = TopicName.parse(topic_name)
            subs = broker_admin.get(f"{broker_admin.topic_path(parsed)}/subscriptions")
            assert subscription in subs
    finally:
        sidecar.close()


def test_the_broker_itself_holds_a_delayed_message(
    real_pulsar: RealPulsar, real_namespace: NamespaceName, client_log: Path
) -> None:
    """A Shared subscription of the test's own, made before the sends: the broker (not the
    worker's gate) keeps each message until its delay is over. Measured: how late each one
    arrives against publish time + delay; never early."""
    delay = 4
    sidecar = rig.sidecar(real_pulsar, client_log, send_delay_seconds_of_two_phase_deletion=delay)
    raw = rig.client(real_pulsar, client_log)
    try:
        topic = TopicName(real_namespace, "held")
        sidecar.phase_one.enqueue([pending(topic, 1)])  # makes the topics
        watcher = raw.subscribe(
            real_namespace.deletion_topic, "watcher", consumer_type=pulsar.ConsumerType.Shared,
            initial_position=pulsar.InitialPosition.Latest,
        )  # fmt: skip
        sidecar.phase_one.enqueue([pending(topic, ledger) for ledger in range(2, 12)])
        timed = rig.receive_timed(watcher, 10, timeout=60)
        late = [at - m.publish_timestamp() / 1000 - delay for m, at in timed]
        rig.drained(watcher, [m for m, _ in timed])
        print(f"delayed delivery: {min(late):+.3f} s to {max(late):+.3f} s past the delay")
        assert min(late) >= -0.005, late  # the publish time is stamped in whole milliseconds
    finally:
        raw.close()
        sidecar.close()


def test_reconsume_later_goes_through_the_real_retry_topic_then_to_the_archive(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    client_log: Path, java: JavaPrograms,
) -> None:  # fmt: skip
    """A ledger a real topic still references: reconsumed through the broker's retry topic
    (delayed by the broker), then archived with Java's properties, which a Java consumer with
    `Schema.AVRO` reads as a dead-lettered message."""
    raw = rig.client(real_pulsar, client_log)
    sidecar = rig.sidecar(
        real_pulsar, client_log, max_reconsume_times_of_two_phase_deletion=2,
        deletion_namespaces=(str(real_namespace),),
    )  # fmt: skip
    try:
        topic = TopicName(real_namespace, "busy")
        rig.produce(raw, topic, 5)
        (referenced, *_) = sorted(rig.ledgers_of(broker_admin, topic))
        sidecar.phase_one.enqueue([pending(topic, referenced)])  # a crash before the commit
        recorder = rig.run_worker(sidecar, lambda r: Outcome.ARCHIVED in r.of(referenced))
        assert recorder.of(referenced) == [Outcome.RECONSUMED, Outcome.RECONSUMED, Outcome.ARCHIVED]
        assert referenced in rig.ledgers_of(broker_admin, topic)
        retry = TopicName.parse(real_namespace.retry_topic)
        stats = broker_admin.get(f"{broker_admin.topic_path(retry)}/stats")
        assert stats["msgInCounter"] == 2  # both reconsumes went through the broker's topic
        archive = raw.subscribe(
            real_namespace.archive_topic, "inspect",
            initial_position=pulsar.InitialPosition.Earliest,
        )  # fmt: skip
        (archived,) = rig.receive_all(archive, 1)
        properties = archived.properties()
        assert properties[props.RECONSUME_TIMES] == "3"
        assert properties[props.REAL_TOPIC] == real_namespace.deletion_topic
        assert properties[props.REAL_SUBSCRIPTION] == SUBSCRIPTION
        assert "still referenced" in properties[props.ARCHIVE_REASON]
        (dead,) = java.run("JanitorPeer", "read", real_pulsar.service_url,
                           real_namespace.archive_topic, "java-inspect", 1)  # fmt: skip
        assert (dead["topicName"], dead["ledgerId"]) == (str(topic), referenced)
        assert dead["properties"] == properties
    finally:
        sidecar.close()
        raw.close()


def test_the_avro_schema_is_in_the_real_registry(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    client_log: Path,
) -> None:  # fmt: skip
    sidecar = rig.sidecar(real_pulsar, client_log)
    try:
        sidecar.phase_one.enqueue([pending(TopicName(real_namespace, "t"), 1)])
    finally:
        sidecar.close()
    served = broker_admin.get(f"/admin/v2/schemas/{real_namespace}/{DELETION_TOPIC}/schema")
    assert served["type"] == "AVRO"
    ours = json.loads(AVSC.read_text())
    theirs = json.loads(served["data"])
    assert theirs["name"] == ours["name"]
    assert [f["name"] for f in theirs["fields"]] == [f["name"] for f in ours["fields"]]


def test_the_first_sends_of_a_namespace_leave_one_schema_ledger(
    real_pulsar: RealPulsar, real_namespace: NamespaceName, pulsar_zk: KazooClient,
    client_log: Path,
) -> None:  # fmt: skip
    """The broker stores a ledger for every schema request the partitions' first producers and
    consumers make at once, and records one: the rest leaked (4 of 5 here). Registered once
    through the admin API before anything connects, the schema has one ledger, recorded."""
    sidecar = rig.sidecar(real_pulsar, client_log, deletion_namespaces=(str(real_namespace),))
    try:
        sidecar.phase_one.enqueue([pending(TopicName(real_namespace, "t"), 1)])
        worker = sidecar.worker(refresh_interval_seconds=0.5)
        worker.start()
        time.sleep(2)  # every partition's consumer connected
        worker.stop()
    finally:
        sidecar.close()
    for topic in (DELETION_TOPIC, f"{DELETION_TOPIC}-{SUBSCRIPTION}-RETRY"):
        stored = rig.schema_ledgers(pulsar_zk, f"{real_namespace}/{topic}")
        locator, _ = pulsar_zk.get(f"/schemas/{real_namespace}/{topic}")
        recorded = SchemaLocator()
        recorded.ParseFromString(locator)
        assert stored == {entry.position.ledgerId for entry in recorded.index}, topic
        assert len(stored) == 1, topic


def test_a_deletion_topic_with_another_schema_is_refused_with_a_clear_message(
    real_pulsar: RealPulsar, real_namespace: NamespaceName, client_log: Path
) -> None:
    raw = rig.client(real_pulsar, client_log)
    try:
        squatter = raw.create_producer(
            real_namespace.deletion_topic, schema=pulsar.schema.StringSchema()
        )
        squatter.send("not a pending deletion")
        sidecar = rig.sidecar(real_pulsar, client_log)
        try:
            with pytest.raises(EnqueueError) as refused:
                sidecar.phase_one.enqueue([pending(TopicName(real_namespace, "t"), 1)])
        finally:
            sidecar.close()
    finally:
        raw.close()
    (line,) = [line for line in str(refused.value).splitlines() if "ledger 1 of" in line.lower()]
    assert "__ledger_deletion holds a STRING schema, not our AVRO PendingDeleteLedgerInfo" in line


@pytest.mark.parametrize("refusal", ["namespace missing", "topic squatted"])
def test_one_refused_send_of_three_is_named_and_nothing_commits(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    pulsar_zk: KazooClient, client_log: Path, refusal: str,
) -> None:  # fmt: skip
    """Three pending deletions in one call: two to a namespace that takes them, one to a
    namespace whose deletion topic the broker refuses (the namespace does not exist, or its
    deletion topic holds another schema). The refused one is named, the commit never runs;
    the other two are on the broker (a pending deletion whose commit never comes is safe:
    the worker finds its ledger still referenced)."""
    raw = rig.client(real_pulsar, client_log)
    other = NamespaceName(real_namespace.tenant, refusal.split()[1])
    expected = "HTTP 404 Namespace not found"
    if refusal == "topic squatted":
        broker_admin.create_namespace(other)
        squatter = raw.create_producer(other.deletion_topic, schema=pulsar.schema.StringSchema())
        squatter.send("not a pending deletion")
        squatter.close()
        expected = "holds a STRING schema, not our AVRO PendingDeleteLedgerInfo"
    taken, refused = TopicName(real_namespace, "orders"), TopicName(other, "orders")
    sidecar = rig.sidecar(real_pulsar, client_log, send_delay_seconds_of_two_phase_deletion=3600)
    committed: list[bool] = []
    try:
        infos = [pending(taken, 101), pending(refused, 102), pending(taken, 103)]
        with pytest.raises(EnqueueError) as failed:
            sidecar.phase_one.enqueue_then_commit(infos, lambda: committed.append(True))
    finally:
        sidecar.close()
        raw.close()
        if refusal == "namespace missing":  # registered before its send; no one's to watch
            pulsar_zk.delete(f"/ledger-janitor/deletion-namespaces/{other}")
    assert committed == []
    (listed,) = str(failed.value).splitlines()[1:]
    assert listed.startswith(f"MANAGED_LEDGER LEDGER 102 of {refused}: "), listed
    assert expected in listed, listed
    deletion = TopicName(real_namespace, DELETION_TOPIC)
    stats = broker_admin.get(f"{broker_admin.topic_path(deletion)}/partitioned-stats")
    assert stats["subscriptions"][SUBSCRIPTION]["msgBacklog"] == 2  # 101 and 103, held
