"""Vectors and helpers shared by the message tests."""

from __future__ import annotations

import io
from typing import Any

import fastavro
from hypothesis import strategies as st

from core.errors import DecodeError
from deletion.domain.message import (
    KIND_PROPERTY,
    MAX_LEDGER_ID,
    SCHEMA,
    LedgerComponent,
    LedgerKind,
    LedgerType,
    PendingDeleteLedgerInfo,
    decode,
    encode,
)
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

# Avro binary, schemaless (what Pulsar's Schema.AVRO puts in a payload):
# - a union is the zigzag varint of the branch index (null = 0 -> 00, the value = 1 -> 02),
#   followed by the branch's value;
# - long/int: zigzag varint, zigzag(n) = 2n for n >= 0 and 2|n| - 1 for n < 0;
# - string/bytes: zigzag varint length, then the bytes;
# - enum: zigzag varint of the symbol index;
# - boolean: one byte, 00 or 01;
# - map: blocks of (zigzag count, then key/value pairs), closed by a 00 block.
#
# VECTOR_1 and VECTOR_2 are in this project's first field order (the PIP's); they are still
# decoded, never written any more. JAVA_1 and JAVA_2 are the same infos in the order we write
# now, Java's reflect order (tests/unit/test_message_java.py derives it).
#
# Vector 1: topicName "public/default/t", MANAGED_LEDGER, LEDGER, ledgerId 7, no context,
# checkLedgerStillInUse true, empty properties.
#   02                     topicName: union branch 1 (string)
#   20                     length 16 -> zigzag 32 = 0x20
#   7075626c69632f64656661756c742f74   "public/default/t"
#   02 00                  ledgerComponent: branch 1, symbol 0 (MANAGED_LEDGER)
#   02 00                  ledgerType: branch 1, symbol 0 (LEDGER)
#   02 0e                  ledgerId: branch 1, zigzag(7) = 14 = 0x0e
#   00                     context: branch 0 (null)
#   01                     checkLedgerStillInUse: true (not a union)
#   02 00                  properties: branch 1 (map), then the closing empty block
VECTOR_1 = bytes.fromhex("02207075626c69632f64656661756c742f7402000200020e00010200")


INFO_1 = PendingDeleteLedgerInfo(
    TopicName(NamespaceName("public", "default"), "t"),
    LedgerComponent.MANAGED_LEDGER,
    LedgerType.LEDGER,
    7,
)


# Vector 2: topicName "t/ns/x", MANAGED_CURSOR, OFFLOAD_LEDGER, ledgerId 300,
# context = ManagedLedgerInfo.LedgerInfo{ledgerId: 300}, checkLedgerStillInUse false,
# properties {"k": "v"}.
#   The context is protobuf: field 1 varint -> tag 0x08; 300 = 0b10_0101100 -> ac 02.
#   02 0c 742f6e732f78     topicName: branch 1, length 6 -> zigzag 12 = 0x0c, "t/ns/x"
#   02 02                  ledgerComponent: branch 1, symbol 1 (MANAGED_CURSOR) -> zigzag 2
#   02 02                  ledgerType: branch 1, symbol 1 (OFFLOAD_LEDGER)
#   02 d8 04               ledgerId: branch 1, zigzag(300) = 600 = 0b100_1011000 -> d8 04
#   02 06 08ac02           context: branch 1, length 3 -> 06, the LedgerInfo bytes
#   00                     checkLedgerStillInUse: false
#   02 02 02 6b 02 76 00   properties: branch 1, block of 1 entry (zigzag 2),
#                          key "k" (len 1 -> 02), value "v", closing block 00
CONTEXT_2 = bytes.fromhex("08ac02")


VECTOR_2 = bytes.fromhex("020c742f6e732f780202020202d804020608ac02000202026b027600")


INFO_2 = PendingDeleteLedgerInfo(
    TopicName(NamespaceName("t", "ns"), "x"),
    LedgerComponent.MANAGED_CURSOR,
    LedgerType.OFFLOAD_LEDGER,
    300,
    context=CONTEXT_2,
    check_ledger_still_in_use=False,
    properties={"k": "v"},
)


# The same two in the order written now: fields sorted by name.
#   01 | 00 | 02 00 | 02 0e | 02 00 | 02 00 | 02 20 "public/default/t"
JAVA_1 = bytes.fromhex("01000200020e0200020002207075626c69632f64656661756c742f74")


#   00 | 02 06 08ac02 | 02 02 | 02 d804 | 02 02 | 02 02 026b 0276 00 | 02 0c "t/ns/x"
JAVA_2 = bytes.fromhex("00020608ac02020202d80402020202026b027600020c742f6e732f78")


JAVA_FIELDS = [
    "checkLedgerStillInUse",
    "context",
    "ledgerComponent",
    "ledgerId",
    "ledgerType",
    "properties",
    "topicName",
]


def raw_record(**overrides: Any) -> bytes:
    """Encode a record straight through fastavro, bypassing the dataclass's validation."""
    record: dict[str, Any] = {
        "topicName": "public/default/t",
        "ledgerComponent": "MANAGED_LEDGER",
        "ledgerType": "LEDGER",
        "ledgerId": 7,
        "context": None,
        "checkLedgerStillInUse": True,
        "properties": {},
    }
    record.update(overrides)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, record)
    return out.getvalue()


def _payload_of_size(size: int) -> bytes:
    """A valid message of exactly `size` bytes, grown through a property value."""
    base = len(raw_record(properties={"pad": ""}))
    for filler in range(max(0, size - base - 8), size):
        payload = raw_record(properties={"pad": "x" * filler})
        if len(payload) == size:
            return payload
    raise AssertionError(f"no filler gives {size} bytes")


tenant_names = st.text(alphabet="abcxyzABC019_-=:.", min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..")
)


# Pulsar names arrive as UTF-8, which cannot carry a lone surrogate.
local_names = st.one_of(
    st.sampled_from(["a b", "a:b", "100%", "a b:c%d", "é", "日本語", "t-partition-3", "x~y*z"]),
    st.text(st.characters(codec="utf-8", exclude_characters="/"), min_size=1, max_size=40).filter(
        lambda s: s not in (".", "..")
    ),
)


topics = st.builds(TopicName, st.builds(NamespaceName, tenant_names, tenant_names), local_names)


contexts = st.builds(
    lambda ledger_id, entries: ManagedLedgerInfo.LedgerInfo(
        ledgerId=ledger_id, entries=entries
    ).SerializeToString(),
    st.integers(0, MAX_LEDGER_ID),
    st.integers(0, 2**40),
)


# Free-form properties: any key but the kind's, whose value must name a kind (Hypothesis
# draws string constants from the code under test, so it does try `ledgerKind`).
other_keys = st.text(max_size=20).filter(lambda key: key != KIND_PROPERTY)


@st.composite
def infos(draw: st.DrawFn) -> PendingDeleteLedgerInfo:
    """Any valid record: a kind named in its properties sometimes, sent as that kind is."""
    kind = draw(st.none() | st.sampled_from(LedgerKind))
    ledger_type = LedgerType.LEDGER if kind else draw(st.sampled_from(LedgerType))
    context = draw(contexts if ledger_type is LedgerType.OFFLOAD_LEDGER else st.none() | contexts)
    properties = draw(st.dictionaries(other_keys, st.text(max_size=40), max_size=5))
    return PendingDeleteLedgerInfo(
        topic_name=draw(topics),
        ledger_component=kind.component if kind else draw(st.sampled_from(LedgerComponent)),
        ledger_type=ledger_type,
        ledger_id=draw(st.integers(0, MAX_LEDGER_ID)),
        context=context,
        check_ledger_still_in_use=draw(st.booleans()),
        properties=properties if kind is None else {**properties, KIND_PROPERTY: kind.value},
    )


def _decode_or_decode_error(payload: bytes) -> None:
    try:
        decoded = decode(payload)
    except DecodeError:
        return
    # Whatever does decode is a valid message, stable under re-encoding.
    assert 0 <= decoded.ledger_id <= MAX_LEDGER_ID
    assert decode(encode(decoded)) == decoded
