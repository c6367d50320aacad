"""Random ack states through every range encoding and every compression, and back."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import DecodeError
from cursor import (
    AckState,
    CursorInfoContent,
    Position,
    RangeEncoding,
    capture,
    compress,
    decode_cursor_info,
    decode_position_info,
    decompress,
    encode_cursor_info,
    encode_position_info,
    restore,
)
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, ManagedCursorInfo, PositionInfo

COMPRESSIONS = st.sampled_from(list(CompressionType.values()))
BIG = st.integers(0, 2**40)


@st.composite
def ack_states(draw: st.DrawFn) -> AckState:
    mark_delete = Position(draw(st.integers(0, 2**40)), draw(st.integers(-1, 2**20)))
    state = AckState(
        mark_delete,
        batch_index_level=True,
        properties=draw(st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1))),
    )
    ledgers = [mark_delete.ledger_id + draw(st.integers(0, 3)) for _ in range(3)]
    for _ in range(draw(st.integers(0, 30))):
        ledger = draw(st.sampled_from(ledgers))
        first = draw(st.integers(0, 3000))
        state.ack_range(ledger, first, first + draw(st.integers(0, 70)))
    for _ in range(draw(st.integers(0, 4))):
        position = Position(draw(st.sampled_from(ledgers)), draw(st.integers(0, 3000)))
        size = draw(st.integers(2, 200))
        state.ack_batch_index(position, size, draw(st.sets(st.integers(0, size - 1), max_size=5)))
    return state


def same_acks(a: AckState, b: AckState) -> None:
    assert a.mark_delete == b.mark_delete and a.range_count == b.range_count
    assert a.ledger_ids() == b.ledger_ids()
    for ledger_id in a.ledger_ids():
        left, right = a.bitmaps.get(ledger_id), b.bitmaps.get(ledger_id)
        assert left is not None and right is not None
        assert np.array_equal(left.java_words(), right.java_words())
    assert a.batch_indexes() == b.batch_indexes() and a.properties == b.properties


@settings(max_examples=300, deadline=None)
@given(ack_states(), st.sampled_from(list(RangeEncoding)), COMPRESSIONS, st.booleans())
def test_position_info_round_trip(
    state: AckState, encoding: RangeEncoding, compression: int, split: bool
) -> None:
    content, report = capture(state, encoding, max_ranges=2**31)
    assert not report.truncated
    plain = encode_position_info(content, split_required=split)
    # Whatever we write, protobuf reads the same message from it...
    reference = PositionInfo.FromString(plain)
    assert (reference.ledgerId, reference.entryId) == tuple(state.mark_delete)
    if not split:  # ...and in canonical order, writes the very same bytes.
        assert reference.SerializeToString() == plain
    stored = compress(plain, compression)  # type: ignore[arg-type]
    back, found = decompress(stored, "test")
    assert back == plain and found == compression
    same_acks(restore(decode_position_info(back), batch_index_level=True), state)


@settings(max_examples=100, deadline=None)
@given(ack_states(), BIG, st.dictionaries(st.text(max_size=4), st.text(max_size=4)))
def test_cursor_info_round_trip(state: AckState, last_active: int, strings: dict[str, str]) -> None:
    content, _ = capture(state, RangeEncoding.MESSAGE_RANGE, max_ranges=2**31)
    info = CursorInfoContent(
        cursors_ledger_id=-1,
        mark_delete=state.mark_delete,
        ranges=content.ranges,
        properties=content.properties,
        last_active=last_active,
        batch_indexes=content.batch_indexes,
        cursor_properties=strings,
    )
    data = encode_cursor_info(info)
    assert ManagedCursorInfo.FromString(data).SerializeToString() == data
    decoded = decode_cursor_info(data)
    assert decoded.ranges.same_as(info.ranges) and decoded.last_active == last_active
    assert decoded.cursor_properties == strings and decoded.batch_indexes == info.batch_indexes


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_ever_raise_decode_error(data: bytes) -> None:
    for decode in (decode_position_info, decode_cursor_info):
        with contextlib.suppress(DecodeError):
            decode(data)
