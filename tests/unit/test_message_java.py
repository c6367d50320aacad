"""Interoperating with Java's `Schema.AVRO(PendingDeleteLedgerInfo.class)`, and old messages.

Java's reflect schema (Avro 1.10+ `ReflectData.AllowNull`) sorts the fields by name. For
`public/default/t`, MANAGED_LEDGER, LEDGER, ledger 5, check=true, no properties and a null
context, a Java producer writes the bytes below; field by field:
    01                          checkLedgerStillInUse: true (primitive boolean, no union)
    00                          context: union branch 0, null
    02 00                       ledgerComponent: branch 1, symbol 0 (MANAGED_LEDGER)
    02 0a                       ledgerId: branch 1, zigzag(5) = 10
    02 00                       ledgerType: branch 1, symbol 0 (LEDGER)
    02 00                       properties: branch 1, an empty map (the closing block only)
    02 20 7075...2f74           topicName: branch 1, length 16, "public/default/t"
"""

from __future__ import annotations

import contextlib
import copy
import io
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings

from core.errors import DecodeError
from deletion.domain.message import (
    SCHEMA_DEFINITION,
    V1_SCHEMA,
    V1_SCHEMA_DEFINITION,
    LedgerComponent,
    LedgerType,
    PendingDeleteLedgerInfo,
    decode,
    encode,
    writer_schema_of,
)
from deletion.domain.topics import NamespaceName, TopicName
from tests.unit.message_rig import INFO_1, INFO_2, JAVA_1, JAVA_2, VECTOR_1, VECTOR_2, infos

JAVA_VECTOR = bytes.fromhex("01000200020a0200020002207075626c69632f64656661756c742f74")
JAVA_INFO = PendingDeleteLedgerInfo(
    TopicName(NamespaceName("public", "default"), "t"),
    LedgerComponent.MANAGED_LEDGER,
    LedgerType.LEDGER,
    5,
    context=None,
    check_ledger_still_in_use=True,
)


def _v1(info: PendingDeleteLedgerInfo) -> bytes:
    """What this project wrote before, for the same info."""
    out = io.BytesIO()
    record = {
        "topicName": str(info.topic_name),
        "ledgerComponent": info.ledger_component.value,
        "ledgerType": info.ledger_type.value,
        "ledgerId": info.ledger_id,
        "context": info.context,
        "checkLedgerStillInUse": info.check_ledger_still_in_use,
        "properties": dict(info.properties),
    }
    fastavro.schemaless_writer(out, V1_SCHEMA, record)
    return out.getvalue()


def test_java_bytes_decode() -> None:
    decoded = decode(JAVA_VECTOR)
    assert decoded == JAVA_INFO
    assert dict(decoded.properties) == {}
    assert decoded.context is None


def test_we_write_exactly_what_java_writes() -> None:
    assert encode(JAVA_INFO).hex() == JAVA_VECTOR.hex()


def test_old_format_still_decodes() -> None:
    assert decode(VECTOR_1) == INFO_1
    assert decode(VECTOR_2) == INFO_2
    assert _v1(INFO_2) == VECTOR_2


@settings(max_examples=200, deadline=None)
@given(infos())
def test_formats_are_told_apart_by_the_first_byte(info: PendingDeleteLedgerInfo) -> None:
    new, old = encode(info), _v1(info)
    assert new[:1] in (b"\x00", b"\x01")
    assert old[:1] == b"\x02"
    assert decode(new) == info
    assert decode(old) == info


@settings(max_examples=200, deadline=None)
@given(infos())
def test_a_wrong_declared_schema_never_misreads(info: PendingDeleteLedgerInfo) -> None:
    # A label naming the other of our schemas (an old message re-sent under the current
    # schema, or a wrong registry answer) never turns the bytes into a different message:
    # they are read as their writer wrote them, or refused.
    for payload, label in ((_v1(info), SCHEMA_DEFINITION), (encode(info), V1_SCHEMA_DEFINITION)):
        with contextlib.suppress(DecodeError):
            assert decode(payload, writer_schema=label) == info


@settings(max_examples=200, deadline=None)
@given(infos())
def test_an_old_message_resent_under_the_current_schema_is_read(
    info: PendingDeleteLedgerInfo,
) -> None:
    assert decode(_v1(info), writer_schema=SCHEMA_DEFINITION) == info


@pytest.mark.parametrize("first", [b"\x03", b"\x04", b"\xff"])
def test_no_known_writer_starts_with_another_byte(first: bytes) -> None:
    with pytest.raises(DecodeError, match="schema"):
        writer_schema_of(first + JAVA_VECTOR[1:])


def test_non_canonical_boolean_refused() -> None:
    # fastavro reads any non-zero byte as true; Java writes only 00 and 01.
    with pytest.raises(DecodeError):
        decode(b"\x03" + JAVA_VECTOR[1:])
    with pytest.raises(DecodeError, match="non-canonical"):
        decode(b"\x03" + JAVA_VECTOR[1:], writer_schema=SCHEMA_DEFINITION)


def test_over_long_ledger_id_varint_refused() -> None:
    # ledgerId 5 as 8a 80 80 80 80 80 80 80 80 80 00: the same value, not Java's encoding.
    payload = JAVA_VECTOR.replace(bytes.fromhex("020a"), bytes.fromhex("028a808080808080808000"), 1)
    with pytest.raises(DecodeError):
        decode(payload)


def _java_writer_with_extra_field() -> dict[str, Any]:
    """A newer Java class: another package, nested enums and a field we do not know."""
    writer = copy.deepcopy(SCHEMA_DEFINITION)
    writer["namespace"] = "org.example.newer"
    writer["fields"].insert(3, {"name": "deletedBy", "type": ["null", "string"], "default": None})
    return writer


def test_a_registry_writer_schema_resolves_by_field_name() -> None:
    writer = _java_writer_with_extra_field()
    record = {
        "checkLedgerStillInUse": False,
        "context": None,
        "ledgerComponent": "MANAGED_CURSOR",
        "deletedBy": "ops",
        "ledgerId": 42,
        "ledgerType": "LEDGER",
        "properties": {"k": "v"},
        "topicName": "t/ns/x",
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(copy.deepcopy(writer)), record)
    decoded = decode(out.getvalue(), writer_schema=writer)
    assert decoded.ledger_id == 42
    assert decoded.ledger_component is LedgerComponent.MANAGED_CURSOR
    assert decoded.check_ledger_still_in_use is False
    assert dict(decoded.properties) == {"k": "v"}
    assert str(decoded.topic_name) == "t/ns/x"


def test_a_writer_schema_without_a_required_field_is_refused() -> None:
    writer = copy.deepcopy(SCHEMA_DEFINITION)
    writer["fields"] = [f for f in writer["fields"] if f["name"] != "ledgerId"]
    out = io.BytesIO()
    record = {"checkLedgerStillInUse": True, "topicName": "public/default/t"}
    record |= {"ledgerComponent": "MANAGED_LEDGER", "ledgerType": "LEDGER"}
    fastavro.schemaless_writer(out, fastavro.parse_schema(copy.deepcopy(writer)), record)
    with pytest.raises(DecodeError, match="ledgerId"):
        decode(out.getvalue(), writer_schema=writer)


@pytest.mark.parametrize("vector", [JAVA_1, JAVA_2])
def test_our_bytes_read_by_a_java_reader_schema(vector: bytes) -> None:
    # A Java consumer reads with its reflect schema: the one we ship, by construction.
    record = fastavro.schemaless_reader(
        io.BytesIO(vector), fastavro.parse_schema(copy.deepcopy(SCHEMA_DEFINITION)), None
    )
    assert isinstance(record, dict)
    assert list(record) == [f["name"] for f in SCHEMA_DEFINITION["fields"]]
