"""The strict reader of the current PendingDeleteLedgerInfo layout, held to fastavro: on any
bytes it answers None or exactly what fastavro reads, and only for bytes that fastavro's
re-encoding of what it read gives back (the canonical encoding, which decode demands)."""

from __future__ import annotations

import io
from typing import Any, cast

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deletion.domain import message
from deletion.wire import pending_delete_avro

SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "PendingDeleteLedgerInfo",
        "fields": [
            {"name": "checkLedgerStillInUse", "type": "boolean"},
            {"name": "context", "type": ["null", "bytes"]},
            {
                "name": "ledgerComponent",
                "type": [
                    "null",
                    {
                        "type": "enum",
                        "name": "LedgerComponent",
                        "symbols": ["MANAGED_LEDGER", "MANAGED_CURSOR", "SCHEMA_STORAGE"],
                    },
                ],
            },
            {"name": "ledgerId", "type": ["null", "long"]},
            {
                "name": "ledgerType",
                "type": [
                    "null",
                    {"type": "enum", "name": "LedgerType", "symbols": ["LEDGER", "OFFLOAD_LEDGER"]},
                ],
            },
            {"name": "properties", "type": ["null", {"type": "map", "values": "string"}]},
            {"name": "topicName", "type": ["null", "string"]},
        ],
    }
)

records = st.fixed_dictionaries(
    {
        "checkLedgerStillInUse": st.booleans(),
        "context": st.none() | st.binary(max_size=40),
        "ledgerComponent": st.none() | st.sampled_from(pending_delete_avro.COMPONENTS),
        "ledgerId": st.none() | st.integers(-(2**63), 2**63 - 1),
        "ledgerType": st.none() | st.sampled_from(pending_delete_avro.TYPES),
        "properties": st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=8)),
        "topicName": st.none() | st.text(max_size=30),
    }
)


def _encoded(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, record)
    return out.getvalue()


def _fastavro_canonical(payload: bytes) -> dict[str, Any] | None:
    """fastavro's reading, when the bytes are all read and are the encoding of what was read."""
    stream = io.BytesIO(payload)
    try:
        record = fastavro.schemaless_reader(stream, SCHEMA, None)
        again = _encoded(record)  # type: ignore[arg-type]  # a record schema reads a dict
    except Exception:
        return None
    assert isinstance(record, dict)
    return record if stream.tell() == len(payload) and again == payload else None


@given(records)
@settings(max_examples=400, deadline=None)
def test_reads_every_canonical_encoding_as_fastavro_does(record: dict[str, Any]) -> None:
    payload = _encoded(record)
    assert pending_delete_avro.read(payload) == fastavro.schemaless_reader(
        io.BytesIO(payload), SCHEMA, None
    )


@given(records, st.data())
@settings(max_examples=600, deadline=None)
def test_mangled_bytes_are_refused_or_read_as_fastavro_reads_them(
    record: dict[str, Any], data: st.DataObject
) -> None:
    payload = bytearray(_encoded(record))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(payload)))
        change = data.draw(st.sampled_from(["set", "insert", "delete", "cut"]))
        byte = data.draw(st.sampled_from([0x00, 0x01, 0x02, 0x03, 0x7F, 0x80, 0x81, 0xFF]))
        if change == "set" and at < len(payload):
            payload[at] = byte
        elif change == "insert":
            payload.insert(at, byte)
        elif change == "delete" and at < len(payload):
            del payload[at]
        elif change == "cut":
            del payload[at:]
    _agrees(bytes(payload))


@given(st.binary(max_size=64))
@settings(max_examples=600, deadline=None)
def test_any_bytes_are_refused_or_read_as_fastavro_reads_them(payload: bytes) -> None:
    _agrees(payload)


def _agrees(payload: bytes) -> None:
    strict = pending_delete_avro.read(payload)
    if strict is not None:
        assert strict == _fastavro_canonical(payload)


TOPIC = b"\x02\x0ct/ns/x"  # the topicName branch and its length, then the name
VALID = _encoded(
    {
        "checkLedgerStillInUse": True,
        "context": None,
        "ledgerComponent": "MANAGED_LEDGER",
        "ledgerId": 5,
        "ledgerType": "LEDGER",
        "properties": None,
        "topicName": "t/ns/x",
    }
)


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x02" + VALID[1:], id="boolean byte 02"),
        pytest.param(VALID[:2] + b"\x01" + VALID[3:], id="union branch -1 (fastavro: the last)"),
        pytest.param(VALID[:3] + b"\x01" + VALID[4:], id="enum symbol -1 (fastavro: the last)"),
        pytest.param(VALID.replace(b"\x02\x0a", b"\x02\x8a\x00", 1), id="varint with a zero group"),
        pytest.param(
            VALID.replace(b"\x02\x0a", b"\x02" + b"\xff" * 9 + b"\x7f", 1),
            id="varint past 64 bits",
        ),
        pytest.param(VALID + b"\x00", id="a trailing byte"),
        pytest.param(VALID[:-1], id="cut short"),
        pytest.param(
            VALID.replace(b"\x00" + TOPIC, b"\x02\x02\x02a\x02b\x02\x02c\x02d\x00" + TOPIC),
            id="a map in two blocks",
        ),
        pytest.param(
            VALID.replace(b"\x00" + TOPIC, b"\x02\x01\x08\x02a\x02b\x00" + TOPIC),
            id="a map block with its byte size",
        ),
        pytest.param(
            VALID.replace(b"\x00" + TOPIC, b"\x02\x04\x02a\x02b\x02a\x02c\x00" + TOPIC),
            id="a map with a key twice",
        ),
        pytest.param(VALID.replace(b"t/ns/x", b"t/ns/\xff"), id="a string not UTF-8"),
    ],
)
def test_non_canonical_bytes_are_left_to_the_general_reader(payload: bytes) -> None:
    assert payload != VALID  # the mangling found what it changes
    assert pending_delete_avro.read(payload) is None
    assert _fastavro_canonical(payload) is None


def test_the_valid_vector_is_read() -> None:
    assert pending_delete_avro.read(VALID) == fastavro.schemaless_reader(
        io.BytesIO(VALID), SCHEMA, None
    )


def test_the_layout_read_is_the_current_schema() -> None:
    """The reader's field order and symbols are those of the .avsc the domain publishes, as
    is this test's own copy of it (a change there must change the reader too)."""

    def shape(definition: dict[str, Any]) -> list[tuple[str, Any]]:
        return [
            (f["name"], [t.get("symbols") for t in f["type"] if isinstance(t, dict)])
            for f in definition["fields"]
        ]

    published = shape(message.SCHEMA_DEFINITION)
    assert published == shape(cast(dict[str, Any], SCHEMA))
    symbols = dict(published)
    assert symbols["ledgerComponent"] == [list(pending_delete_avro.COMPONENTS)]
    assert symbols["ledgerType"] == [list(pending_delete_avro.TYPES)]
