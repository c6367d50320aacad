"""Our Avro schema on the topics: declared by phase one's producers and by every consumer,
and each message read with the schema its producer declared (the broker's registry).

pulsar-lite accepts a declared schema and drops it, so the registry's side is played by
harness/schema_broker.py, a loopback stand-in that speaks Pulsar's binary protocol to the
real client: it records what PRODUCER and SUBSCRIBE carried, stamps a producer's messages
with its schema version and answers GetSchema as a registry does.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pulsar
import pytest

from consumers.archive import archive_consumer
from consumers.archive_listing import list_archive
from core.errors import DecodeError
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain import message
from deletion.domain.message import (
    SCHEMA_DEFINITION,
    V1_SCHEMA,
    LedgerComponent,
    LedgerType,
    PendingDeleteLedgerInfo,
)
from deletion.domain.outcome import Outcome
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from harness.janitor import JanitorFactory, Recorder, sqlite_backend
from harness.pulsar_protocol import AVRO, pb, version_bytes
from harness.schema_broker import SchemaBroker, schema_broker
from transport.schema import subscribe, written

NAMESPACE = NamespaceName("tenant", "ns")


def _info(
    ledger_id: int, component: LedgerComponent = LedgerComponent.MANAGED_LEDGER
) -> PendingDeleteLedgerInfo:
    topic = TopicName(NAMESPACE, "t")
    return PendingDeleteLedgerInfo(topic, component, LedgerType.LEDGER, ledger_id)


@pytest.fixture
def registry() -> Iterator[SchemaBroker]:
    with schema_broker() as broker:
        yield broker


def _factory(broker_url: str, tmp_path: Path) -> JanitorFactory:
    """The embedded store, holding the namespace (its topic `t` deleted: its ledgers may go)."""
    backend = sqlite_backend(str(tmp_path / "janitor.db"))
    ManagedLedgerWriter(backend.metadata).ensure_namespace(NAMESPACE)
    return JanitorFactory(backend, broker_url, tmp_path)


@pytest.fixture
def janitor_on_registry(registry: SchemaBroker, tmp_path: Path) -> Iterator[JanitorFactory]:
    factory = _factory(registry.url, tmp_path)
    yield factory
    factory.close()
    factory.backend.ledgers.close()
    factory.backend.metadata.close()


def _declared_definitions(broker: SchemaBroker, command: str) -> dict[str, Any]:
    return {
        d.topic: json.loads(d.definition)
        for d in broker.declared
        if d.command == command and d.type == AVRO
    }


def test_phase_one_and_every_consumer_declare_our_schema(
    registry: SchemaBroker, janitor_on_registry: JanitorFactory
) -> None:
    sidecar = janitor_on_registry.sidecar()
    info = _info(5)
    sidecar.phase_one.enqueue([info])
    with archive_consumer(sidecar.client, NAMESPACE):
        pass

    produced = _declared_definitions(registry, "producer")
    assert produced == {NAMESPACE.deletion_topic: SCHEMA_DEFINITION}
    subscribed = _declared_definitions(registry, "subscribe")
    # The set-up's subscriptions before the first send, and the archive's consumer.
    assert subscribed == {
        NAMESPACE.deletion_topic: SCHEMA_DEFINITION,
        NAMESPACE.retry_topic: SCHEMA_DEFINITION,
        NAMESPACE.archive_topic: SCHEMA_DEFINITION,
    }
    # One version registered, and the client stamped the producer's message with it.
    versions = registry.registry[NAMESPACE.deletion_topic]
    assert [json.loads(v) for v in versions] == [SCHEMA_DEFINITION]
    (stored,) = registry.messages[NAMESPACE.deletion_topic]
    assert pb.MessageMetadata.FromString(stored.metadata).schema_version == version_bytes(0)
    assert stored.payload == message.encode(info)


def test_the_worker_declares_it_and_reads_with_the_registered_schema(
    registry: SchemaBroker, janitor_on_registry: JanitorFactory
) -> None:
    info = _info(7)
    janitor_on_registry.sidecar().phase_one.enqueue([info])
    recorder = Recorder()
    janitor_on_registry.worker(recorder)

    recorder.wait_for(lambda results: len(results) >= 1, timeout=30)
    result = recorder.results[0]
    assert result.outcome is not Outcome.ARCHIVED, result.reason
    assert result.info == info
    worker_subscriptions = [
        d for d in registry.declared if d.command == "subscribe" and d.topic.endswith("RETRY")
    ]
    assert len(worker_subscriptions) == 2  # the set-up's, then the worker's
    assert (NAMESPACE.deletion_topic, 0) in registry.schema_requests


def _reordered_writer() -> dict[str, Any]:
    """Another writer's schema: other record name and namespace, fields in reverse order,
    and one field we do not have."""
    writer = copy.deepcopy(SCHEMA_DEFINITION)
    writer["name"], writer["namespace"] = "LedgerDeletionRequest", "org.example.other"
    writer["fields"] = list(reversed(writer["fields"]))
    writer["fields"].insert(2, {"name": "requestedBy", "type": "string", "default": ""})
    return writer


def _encode(writer: dict[str, Any], info: PendingDeleteLedgerInfo) -> bytes:
    record = {
        "topicName": str(info.topic_name),
        "ledgerComponent": info.ledger_component.value,
        "ledgerType": info.ledger_type.value,
        "ledgerId": info.ledger_id,
        "context": info.context,
        "checkLedgerStillInUse": info.check_ledger_still_in_use,
        "properties": dict(info.properties),
        "requestedBy": "ops",
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(copy.deepcopy(writer)), record)
    return out.getvalue()


def test_each_message_is_read_with_its_writers_schema(
    registry: SchemaBroker, janitor_on_registry: JanitorFactory
) -> None:
    client = janitor_on_registry.sidecar().client
    topic = NAMESPACE.archive_topic
    ours = registry.register(topic, json.dumps(SCHEMA_DEFINITION).encode())
    other_writer = _reordered_writer()
    other = registry.register(topic, json.dumps(other_writer).encode())
    first, second = _info(11, LedgerComponent.MANAGED_CURSOR), _info(12)
    registry.publish(topic, _encode(other_writer, first), other)
    registry.publish(topic, _encode(other_writer, second), other)
    # The reordered bytes are not ours: read by their first byte they would be refused.
    with pytest.raises(DecodeError):
        message.decode(_encode(other_writer, first))
    old = io.BytesIO()
    fastavro.schemaless_writer(old, V1_SCHEMA, _v1_record(13))
    registry.publish(topic, old.getvalue(), ours)  # an old message re-sent under our schema
    registry.publish(topic, message.encode(_info(14)), None)  # a producer that declared none
    registry.publish(topic, message.encode(_info(15)), 99)  # a version the registry lacks

    archived = list_archive(client, NAMESPACE, wait_seconds=2)

    assert [a.info for a in archived] == [first, second, _info(13), _info(14), _info(15)]
    # One GetSchema per version, whatever the number of messages.
    assert registry.schema_requests.count((topic, other)) == 1
    assert sorted(set(registry.schema_requests)) == [(topic, ours), (topic, other), (topic, 99)]


def _v1_record(ledger_id: int) -> dict[str, Any]:
    return {
        "topicName": str(TopicName(NAMESPACE, "t")),
        "ledgerComponent": "MANAGED_LEDGER",
        "ledgerType": "LEDGER",
        "ledgerId": ledger_id,
        "context": None,
        "checkLedgerStillInUse": True,
        "properties": {},
    }


def test_turned_off_nothing_is_declared(
    registry: SchemaBroker, janitor_on_registry: JanitorFactory
) -> None:
    sidecar = janitor_on_registry.sidecar(
        ledger_deletion_schema_enabled_of_two_phase_deletion=False
    )
    sidecar.phase_one.enqueue([_info(21)])
    with archive_consumer(sidecar.client, NAMESPACE):
        pass
    assert registry.declared == []
    assert registry.registry == {}


def test_a_broker_refusing_our_schema_still_gets_every_message(tmp_path: Path) -> None:
    """A topic written before the schema was declared: a real broker refuses a consumer's
    schema there ("Topic does not have schema to check"). Consuming and producing go on
    without one, and the first byte tells the writer."""
    with schema_broker(refuse_schemas=True) as broker:
        factory = _factory(broker.url, tmp_path)
        try:
            sidecar = factory.sidecar()
            info = _info(31)
            sidecar.phase_one.enqueue([info])
            consumer = subscribe(
                sidecar.client,
                NAMESPACE.deletion_topic,
                SUBSCRIPTION,
                initial_position=pulsar.InitialPosition.Earliest,
            )
            received = consumer.receive(10_000)
            consumer.close()
        finally:
            factory.close()
            factory.backend.ledgers.close()
            factory.backend.metadata.close()
    assert {d.command for d in broker.declared} == {"producer", "subscribe"}
    assert written(received) == (message.encode(info), None)
    assert message.decode(*written(received)) == info


def test_pulsar_lite_accepts_the_declared_schema_and_drops_it(
    embedded: JanitorFactory, namespace: NamespaceName
) -> None:
    """What the embedded broker does with it: nothing. No version on the messages, so no
    registry is asked, and the first byte tells the writer."""
    sidecar = embedded.sidecar()
    info = PendingDeleteLedgerInfo(
        TopicName(namespace, "t"), LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, 41
    )
    sidecar.phase_one.enqueue([info])
    consumer = subscribe(
        sidecar.client,
        namespace.deletion_topic,
        "inspect",
        initial_position=pulsar.InitialPosition.Earliest,
    )
    received = consumer.receive(10_000)
    consumer.close()
    assert written(received) == (message.encode(info), None)
