"""PendingDeleteLedgerInfo's Avro form: hand-derived vectors, the shipped schema, round trips."""

from __future__ import annotations

import json
from importlib import resources

import fastavro
import pytest
from hypothesis import given, settings

from deletion.domain.message import (
    PendingDeleteLedgerInfo,
    decode,
    encode,
)
from tests.unit.message_rig import (
    INFO_1,
    INFO_2,
    JAVA_1,
    JAVA_2,
    JAVA_FIELDS,
    VECTOR_1,
    VECTOR_2,
    infos,
    raw_record,
)


@pytest.mark.parametrize(
    ("info", "vector"), [(INFO_1, JAVA_1), (INFO_2, JAVA_2)], ids=["plain", "offload"]
)
def test_encode_matches_hand_derived_vector(info: PendingDeleteLedgerInfo, vector: bytes) -> None:
    assert encode(info).hex() == vector.hex()


@pytest.mark.parametrize(
    ("info", "vector"),
    [(INFO_1, VECTOR_1), (INFO_2, VECTOR_2), (INFO_1, JAVA_1), (INFO_2, JAVA_2)],
    ids=["plain-v1", "offload-v1", "plain", "offload"],
)
def test_decode_of_hand_derived_vector(info: PendingDeleteLedgerInfo, vector: bytes) -> None:
    decoded = decode(vector)
    assert decoded == info
    assert dict(decoded.properties) == dict(info.properties)


def test_offload_context_decodes_to_ledger_info() -> None:
    ledger_info = decode(VECTOR_2).ledger_info
    assert ledger_info is not None
    assert ledger_info.ledgerId == 300
    assert decode(VECTOR_1).ledger_info is None


def test_null_properties_decode_as_empty() -> None:
    assert dict(decode(raw_record(properties=None)).properties) == {}


def test_raw_record_helper_agrees_with_encode() -> None:
    assert raw_record() == JAVA_1


def test_shipped_schema_has_java_field_order() -> None:
    text = (
        resources.files("deletion.domain").joinpath("pending_delete_ledger_info.avsc").read_text()
    )
    schema = json.loads(text)
    fastavro.parse_schema(schema)  # raises if the schema is invalid
    assert schema["type"] == "record"
    assert schema["name"] == "PendingDeleteLedgerInfo"
    assert [f["name"] for f in schema["fields"]] == JAVA_FIELDS
    enums = {
        f["name"]: next(t["symbols"] for t in f["type"] if isinstance(t, dict))
        for f in schema["fields"]
        if f["name"] in ("ledgerComponent", "ledgerType")
    }
    assert enums == {
        "ledgerComponent": ["MANAGED_LEDGER", "MANAGED_CURSOR", "SCHEMA_STORAGE"],
        "ledgerType": ["LEDGER", "OFFLOAD_LEDGER"],
    }


@settings(max_examples=200, deadline=None)
@given(infos())
def test_round_trip(info: PendingDeleteLedgerInfo) -> None:
    decoded = decode(encode(info))
    assert decoded == info
    assert str(decoded.topic_name) == str(info.topic_name)
    assert dict(decoded.properties) == dict(info.properties)
