"""Java clients both ways, on the real broker: a Java producer with
`Schema.AVRO(PendingDeleteLedgerInfo.class)` (the PIP's class, `context` as the serialized
`LedgerInfo` bytes) feeds our worker; a Java consumer with `enableRetry(true)` and a
`DeadLetterPolicy` reads what our worker reconsumed and archived, and its own
`reconsumeLater` messages are read by our worker. Properties are compared exactly: what our
worker writes against what the Java client itself writes for the same message. And what
`Schema.AVRO` does with the PIP's own class, whose `context` is the protobuf type."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pulsar

from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.outcome import Outcome
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.pulsar_admin import BrokerAdmin
from ledger_janitor.demo.seeding import pending
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from transport.schema import subscribe, written

PEER = "JanitorPeer"


def test_what_schema_avro_makes_of_the_pips_own_class(java: JavaPrograms) -> None:
    """The PIP declares `context` as MLDataFormats.ManagedLedgerInfo.LedgerInfo. Avro's
    reflection does not refuse it: it walks into the protobuf class's internals
    (`bitField0_`, `memoizedIsInitialized`, `UnknownFieldSet`, ...), a schema no other
    language can produce. A message with no context encodes; one with a context fails. So
    the contract is `bytes` holding the serialized LedgerInfo (DESIGN.md, the avsc)."""
    (fact,) = java.run(PEER, "pip-schema")
    reflected = json.loads(fact["schema"])
    context = next(f for f in reflected["fields"] if f["name"] == "context")
    names = {field["name"] for field in context["type"][1]["fields"]}
    assert {"bitField0_", "memoizedIsInitialized", "unknownFields"} <= names
    assert fact["null_context_bytes"] > 0
    assert fact["context_error"].startswith(
        "org.apache.pulsar.client.api.SchemaSerializationException"
    )
    (ours,) = java.run(PEER, "schema")
    contract = json.loads(ours["schema"])
    assert (
        next(f for f in contract["fields"] if f["name"] == "context")["type"][1]["type"] == "bytes"
    )


def test_a_java_producer_feeds_our_worker(
    java: JavaPrograms, real_pulsar: RealPulsar, broker_admin: BrokerAdmin,
    real_namespace: NamespaceName, client_log: Path,
) -> None:  # fmt: skip
    """Its messages carry the Java class's schema version; our worker reads them with that
    writer schema and rules on them like its own: a referenced ledger is reconsumed."""
    raw = rig.client(real_pulsar, client_log)
    sidecar = rig.sidecar(real_pulsar, client_log, deletion_namespaces=(str(real_namespace),))
    try:
        topic = TopicName(real_namespace, "fed")
        rig.produce(raw, topic, 3)
        (ledger, *_) = sorted(rig.ledgers_of(broker_admin, topic))
        sidecar.phase_one.enqueue([pending(topic, 99_999_999)])  # our topics, our schema first
        java.run(PEER, "produce", real_pulsar.service_url, real_namespace.deletion_topic,
                 str(topic), ledger, "MANAGED_LEDGER", 1)  # fmt: skip
        recorder = rig.run_worker(sidecar, lambda r: Outcome.RECONSUMED in r.of(ledger))
        (result,) = [r for r in recorder.results if r.info and r.info.ledger_id == ledger][:1]
        assert result.info is not None
        assert result.info.topic_name == topic and result.info.properties == {"sentBy": "java"}
        assert "still referenced" in result.reason
    finally:
        sidecar.close()
        raw.close()


def test_java_reconsume_later_and_ours_write_the_same_properties_and_read_each_other(
    java: JavaPrograms, real_pulsar: RealPulsar, broker_admin: BrokerAdmin,
    real_namespace: NamespaceName, client_log: Path,
) -> None:  # fmt: skip
    """Two pending deletions of referenced ledgers. A Java consumer on our subscription
    reconsumes the first later (Java's own first retry); our worker then reconsumes the
    second (our first retry) and the Java retry (our second). A subscription of the test's
    own on the retry topic reads all three as the broker holds them; a Java consumer with
    enableRetry and a DeadLetterPolicy then reads ours off the retry topic."""
    raw = rig.client(real_pulsar, client_log)
    sidecar = rig.sidecar(
        real_pulsar, client_log, deletion_namespaces=(str(real_namespace),),
        max_reconsume_times_of_two_phase_deletion=5,
        reconsume_later_seconds_of_two_phase_deletion=5,
    )  # fmt: skip
    try:
        topic = TopicName(real_namespace, "both-ways")
        rig.produce(raw, topic, 25)  # three ledgers
        first, second, *_ = sorted(rig.ledgers_of(broker_admin, topic))
        deletion, retry = real_namespace.deletion_topic, real_namespace.retry_topic
        sidecar.phase_one.enqueue([pending(topic, first)])
        inspect = subscribe(
            sidecar.client, retry, "inspect", initial_position=pulsar.InitialPosition.Earliest
        )
        (original,) = java.run(PEER, "reconsume", real_pulsar.service_url, deletion,
                               SUBSCRIPTION, 1, 5)  # fmt: skip
        # Phase one stamps its own delay, in milliseconds as Java would.
        assert (
            original["properties"] == {props.DELAY_TIME: "2000"} and original["ledgerId"] == first
        )
        sidecar.phase_one.enqueue([pending(topic, second)])
        rig.run_worker(
            sidecar,
            lambda r: Outcome.RECONSUMED in r.of(first) and Outcome.RECONSUMED in r.of(second),
        )
        held = {}
        for received in rig.receive_all(inspect, 3):
            info = message.decode(*written(received))
            properties = received.properties()
            held[(info.ledger_id, properties[props.RECONSUME_TIMES])] = properties
            inspect.acknowledge(received)
        inspect.close()
        java_first, ours_first = held[(first, "1")], held[(second, "1")]
        ours_second = held[(first, "2")]
        print("Java's first retry:", json.dumps(java_first, sort_keys=True))
        print("our first retry:   ", json.dumps(ours_first, sort_keys=True))
        print("our second retry:  ", json.dumps(ours_second, sort_keys=True))
        # The same keys as Java's own (ours adds the first attempt's time), the same values
        # where they do not name the message itself.
        assert set(ours_first) - {props.FIRST_ATTEMPT_TIME} == set(java_first)
        for key in (props.REAL_TOPIC, props.REAL_SUBSCRIPTION, props.RECONSUME_TIMES,
                    props.DELAY_TIME):  # fmt: skip
            assert ours_first[key] == java_first[key], key
        for retry_properties in (java_first, ours_first):
            origin = retry_properties[props.ORIGIN_MESSAGE_ID]
            assert retry_properties[props.ORIGIN_MESSAGE_ID_Y_TIME] == origin
            assert re.fullmatch(r"\d+:\d+:\d+", origin), origin  # ledger:entry:partition
        # Our reconsume of Java's retry is exactly Java's algorithm: copy, count, delay.
        expected = {**java_first, props.RECONSUME_TIMES: "2", props.DELAY_TIME: "5000"}
        expected[props.FIRST_ATTEMPT_TIME] = ours_second[props.FIRST_ATTEMPT_TIME]
        assert ours_second == expected
        # A Java consumer with enableRetry reads both of ours off the retry topic.
        read = java.run(PEER, "receive", real_pulsar.service_url, deletion, SUBSCRIPTION, 2)
        by_ledger = {fact["ledgerId"]: fact for fact in read}
        assert by_ledger[first]["properties"] == ours_second
        assert by_ledger[second]["properties"] == ours_first
        assert {fact["topicName"] for fact in read} == {str(topic)}
        assert all(fact["topic"].endswith(f"{SUBSCRIPTION}-RETRY") for fact in read)
    finally:
        sidecar.close()
        raw.close()
