"""What `message.decode` refuses, and that nothing but a DecodeError comes out of hostile bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import DecodeError
from deletion.domain.message import (
    MAX_LEDGER_ID,
    MAX_MESSAGE_BYTES,
    LedgerType,
    PendingDeleteLedgerInfo,
    decode,
)
from tests.unit.message_rig import (
    INFO_1,
    JAVA_1,
    JAVA_2,
    VECTOR_1,
    VECTOR_2,
    _decode_or_decode_error,
    _payload_of_size,
    raw_record,
)


def test_decode_rejects_empty_bytes() -> None:
    with pytest.raises(DecodeError):
        decode(b"")


@pytest.mark.parametrize(
    "vector",
    [VECTOR_1, VECTOR_2, JAVA_1, JAVA_2],
    ids=["plain-v1", "offload-v1", "plain", "offload"],
)
def test_decode_rejects_every_truncation(vector: bytes) -> None:
    for length in range(len(vector)):
        with pytest.raises(DecodeError):
            decode(vector[:length])


@pytest.mark.parametrize("trailer", [b"\x00", b"\x02", b"garbage"])
@pytest.mark.parametrize("vector", [VECTOR_1, JAVA_1], ids=["v1", "java"])
def test_decode_rejects_trailing_bytes(vector: bytes, trailer: bytes) -> None:
    with pytest.raises(DecodeError, match="trailing"):
        decode(vector + trailer)


@pytest.mark.parametrize("field", ["topicName", "ledgerComponent", "ledgerType", "ledgerId"])
def test_decode_rejects_null_required_field(field: str) -> None:
    with pytest.raises(DecodeError, match=field):
        decode(raw_record(**{field: None}))


@pytest.mark.parametrize("ledger_id", [-1, -(2**63)])
def test_decode_rejects_negative_ledger_id(ledger_id: int) -> None:
    with pytest.raises(DecodeError):
        decode(raw_record(ledgerId=ledger_id))


def test_decode_rejects_hand_built_negative_ledger_id() -> None:
    # VECTOR_1 with ledgerId zigzag(-1) = 01 instead of zigzag(7) = 0e.
    vector = bytes.fromhex("02207075626c69632f64656661756c742f7402000200020100010200")
    with pytest.raises(DecodeError):
        decode(vector)


def test_largest_ledger_id_round_trips() -> None:
    assert decode(raw_record(ledgerId=MAX_LEDGER_ID)).ledger_id == 2**63 - 1


def test_decode_accepts_a_payload_of_exactly_the_limit() -> None:
    payload = _payload_of_size(MAX_MESSAGE_BYTES)
    assert MAX_MESSAGE_BYTES == 64 * 1024
    assert len(decode(payload).properties["pad"]) > 60_000


def test_decode_rejects_oversized_payload() -> None:
    with pytest.raises(DecodeError, match="exceeds"):
        decode(_payload_of_size(MAX_MESSAGE_BYTES + 1))


def test_decode_rejects_offload_ledger_without_context() -> None:
    with pytest.raises(DecodeError, match="context"):
        decode(raw_record(ledgerType="OFFLOAD_LEDGER", context=None))


def test_constructor_rejects_offload_ledger_without_context() -> None:
    with pytest.raises(DecodeError):
        PendingDeleteLedgerInfo(
            INFO_1.topic_name, INFO_1.ledger_component, LedgerType.OFFLOAD_LEDGER, 1
        )


@pytest.mark.parametrize(
    "context",
    [b"\xff", b"\x0a\x05\x01", b"\x08", b"\x00\x00"],
    ids=["bad-tag", "truncated-length", "truncated-varint", "field-zero"],
)
def test_decode_rejects_corrupt_context(context: bytes) -> None:
    with pytest.raises(DecodeError, match="context"):
        decode(raw_record(ledgerType="OFFLOAD_LEDGER", context=context))


@pytest.mark.parametrize(
    "topic",
    ["public/default", "non-persistent://public/default/t", "public/default/a/b", "t/ns/.."],
)
def test_decode_rejects_bad_topic_names(topic: str) -> None:
    with pytest.raises(DecodeError):
        decode(raw_record(topicName=topic))


def test_decode_rejects_enum_index_out_of_range() -> None:
    # ledgerComponent symbol 3 (zigzag 06) does not exist.
    vector = bytes.fromhex("02207075626c69632f64656661756c742f7402060200020e00010200")
    with pytest.raises(DecodeError):
        decode(vector)


def test_decode_rejects_invalid_utf8_topic() -> None:
    vector = bytes.fromhex("020aff2f612f6202000200020e00010200")
    with pytest.raises(DecodeError):
        decode(vector)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_arbitrary_bytes_only_decode_error(payload: bytes) -> None:
    _decode_or_decode_error(payload)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([VECTOR_1, VECTOR_2, JAVA_1, JAVA_2]),
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 100),
)
def test_fuzz_mutated_vectors_only_decode_error(
    vector: bytes, flips: list[tuple[int, int]], cut: int
) -> None:
    mutated = bytearray(vector)
    for index, value in flips:
        mutated[index % len(mutated)] = value
    _decode_or_decode_error(bytes(mutated[: len(mutated) - cut % 4]))
