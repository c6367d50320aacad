"""Reading a message with its writer's schema (Avro schema resolution), and the schema we
declare to the broker. tests/integration/test_schema.py runs both through the real client."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import _pulsar
import fastavro
import pulsar
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import DecodeError, TransientBrokerError
from deletion.domain.message import SCHEMA_DEFINITION, PendingDeleteLedgerInfo, decode, encode
from tests.unit.message_rig import infos
from tests.unit.test_message_java import JAVA_INFO, JAVA_VECTOR
from transport.schema import DeclaredAvroSchema, Written, written

JAVA_PACKAGE = "org.apache.pulsar.broker.service.persistent"


def _record(info: PendingDeleteLedgerInfo) -> dict[str, Any]:
    return {
        "topicName": str(info.topic_name),
        "ledgerComponent": info.ledger_component.value,
        "ledgerType": info.ledger_type.value,
        "ledgerId": info.ledger_id,
        "context": info.context,
        "checkLedgerStillInUse": info.check_ledger_still_in_use,
        "properties": dict(info.properties),
    }


def _write(writer: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(copy.deepcopy(writer)), record)
    return out.getvalue()


def _java_registry_schema() -> dict[str, Any]:
    """What a Java producer's `Schema.AVRO(PendingDeleteLedgerInfo.class)` registers: the
    same fields in the same (sorted) order, named in its own package, without our docs."""
    writer = copy.deepcopy(SCHEMA_DEFINITION)
    writer["namespace"] = JAVA_PACKAGE
    writer.pop("doc")
    for field in writer["fields"]:
        field.pop("doc", None)
        branches = field["type"] if isinstance(field["type"], list) else []
        for branch in branches:
            if isinstance(branch, dict) and branch.get("type") == "enum":
                branch["namespace"] = f"{JAVA_PACKAGE}.PendingDeleteLedgerInfo"
    return writer


def test_java_bytes_read_with_the_schema_java_registered() -> None:
    assert decode(JAVA_VECTOR, writer_schema=_java_registry_schema()) == JAVA_INFO


@settings(max_examples=150, deadline=None)
@given(infos(), st.permutations(range(len(SCHEMA_DEFINITION["fields"]))), st.booleans())
def test_any_field_order_is_read_with_its_writer_schema(
    info: PendingDeleteLedgerInfo, order: list[int], renamed: bool
) -> None:
    writer = copy.deepcopy(SCHEMA_DEFINITION)
    writer["fields"] = [writer["fields"][i] for i in order]
    if renamed:  # resolution matches records by name; the registry's is ours whatever its name
        writer["name"] = "SomeoneElsesRecord"
    assert decode(_write(writer, _record(info)), writer_schema=writer) == info


def test_a_differently_ordered_writer_is_not_readable_without_its_schema() -> None:
    writer = copy.deepcopy(SCHEMA_DEFINITION)
    writer["fields"] = list(reversed(writer["fields"]))
    payload = _write(writer, _record(JAVA_INFO))
    with pytest.raises(DecodeError):
        decode(payload)
    assert decode(payload, writer_schema=writer) == JAVA_INFO


def test_a_writer_whose_types_do_not_resolve_is_refused() -> None:
    writer = copy.deepcopy(SCHEMA_DEFINITION)
    for field in writer["fields"]:
        if field["name"] == "ledgerId":
            field["type"] = ["null", "string"]
    payload = _write(writer, _record(JAVA_INFO) | {"ledgerId": "5"})
    with pytest.raises(DecodeError):
        decode(payload, writer_schema=writer)


def test_what_we_declare_is_our_avro_definition() -> None:
    schema = DeclaredAvroSchema(SCHEMA_DEFINITION)
    info = schema.schema_info()
    assert info.schema_type() == _pulsar.SchemaType.AVRO
    assert json.loads(info.schema()) == SCHEMA_DEFINITION
    assert info.name() == "PendingDeleteLedgerInfo"
    assert schema.encode(encode(JAVA_INFO)) == JAVA_VECTOR  # our bytes, passed on unchanged
    with pytest.raises(TypeError):
        schema.encode(_record(JAVA_INFO))


class _Registry:
    """The native client's `get_schema_info`, answering from a dict or failing as told."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.asked: list[tuple[str, int]] = []
        self.failure = failure
        self.schemas: dict[int, Any] = {}

    def get_schema_info(self, topic: str, version: int) -> Any:
        self.asked.append((topic, version))
        if self.failure is not None:
            raise self.failure
        return self.schemas[version]


class _Message:
    def __init__(self, topic: str, version: int, payload: bytes = JAVA_VECTOR) -> None:
        self.topic, self.version, self.payload = topic, version, payload

    def int_schema_version(self) -> int:
        return self.version

    def topic_name(self) -> str:
        return self.topic

    def data(self) -> bytes:
        return self.payload


def _declared(registry: _Registry) -> DeclaredAvroSchema:
    schema = DeclaredAvroSchema(SCHEMA_DEFINITION)
    schema.attach_client(registry)
    return schema


def test_writer_schemas_are_asked_once_per_topic_and_version() -> None:
    registry = _Registry()
    java = json.dumps(_java_registry_schema())
    registry.schemas[3] = _pulsar.SchemaInfo(_pulsar.SchemaType.AVRO, "", java)
    registry.schemas[4] = _pulsar.SchemaInfo(_pulsar.SchemaType.JSON, "", "{}")
    schema = _declared(registry)
    topic = "persistent://t/ns/__ledger_deletion"
    for partition in (0, 1, 0):
        value = schema.decode_message(_Message(f"{topic}-partition-{partition}", 3))
        assert value == Written(JAVA_VECTOR, _java_registry_schema())
    assert schema.decode_message(_Message(topic, 4)) == Written(JAVA_VECTOR, None)
    assert schema.decode_message(_Message(topic, 4)).writer is None
    # No version on the message (pulsar-lite, a producer that declared none): nothing to ask.
    assert schema.decode_message(_Message(topic, -1)) == Written(JAVA_VECTOR, None)
    assert registry.asked == [(topic, 3), (topic, 4)]


def test_a_transient_registry_failure_is_raised_and_asked_again() -> None:
    registry = _Registry(pulsar.Timeout("GetSchema timed out"))
    schema = _declared(registry)
    for _ in range(2):
        with pytest.raises(TransientBrokerError):
            schema.decode_message(_Message("persistent://t/ns/x", 2))
    assert len(registry.asked) == 2


def test_a_version_the_registry_refuses_is_read_by_its_first_byte() -> None:
    registry = _Registry(pulsar.TopicNotFound("no such version"))
    schema = _declared(registry)
    for _ in range(2):
        assert schema.decode_message(_Message("persistent://t/ns/x", 2)).writer is None
    assert len(registry.asked) == 1


def test_written_without_a_declared_schema_is_the_payload_alone() -> None:
    class Plain:
        def data(self) -> bytes:
            return JAVA_VECTOR

    class Bytes(Plain):
        def value(self) -> bytes:
            return JAVA_VECTOR

    class Declared(Plain):
        def value(self) -> Written:
            return Written(JAVA_VECTOR, SCHEMA_DEFINITION)

    assert written(Plain()) == (JAVA_VECTOR, None)
    assert written(Bytes()) == (JAVA_VECTOR, None)
    assert written(Declared()) == (JAVA_VECTOR, SCHEMA_DEFINITION)
