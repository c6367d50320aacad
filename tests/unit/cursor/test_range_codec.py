"""The column-wise MessageRange codec against protobuf itself, at every varint width and
across the batch and window boundaries of the vectorised passes."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import DecodeError
from cursor import Position, PositionInfoContent, WireRanges
from cursor.wire import decode_position_info, encode_position_info, wire_scan
from cursor.wire.position_info_codec import decode_position_info_pieces
from cursor.wire.range_encode import encode_message_ranges
from cursor.wire.range_runs import LedgerRuns, ledger_run_pieces
from deletion.wire.proto.ml_data_formats_pb2 import PositionInfo

# Each 7 bits more is one varint byte more: 1 to 9 bytes, and negatives take 10.
INT64 = st.one_of(
    st.integers(0, 2**7 - 1),
    st.integers(2**7, 2**14),
    st.integers(2**14, 2**28),
    st.integers(2**28, 2**56),
    st.integers(2**56, 2**63 - 1),
    st.integers(-(2**63), -1),
)
ROWS = st.lists(st.tuples(INT64, INT64, INT64, INT64), max_size=60)


def wire(rows: list[tuple[int, int, int, int]]) -> WireRanges:
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    return WireRanges(*(np.array(c, np.int64) for c in columns))


def reference(ranges: WireRanges) -> bytes:
    """The same PositionInfo as protobuf-java would write it."""
    info = PositionInfo(ledgerId=7, entryId=3)
    for row in zip(*(c.tolist() for c in _columns(ranges)), strict=True):
        message = info.individualDeletedMessages.add()
        message.lowerEndpoint.ledgerId, message.lowerEndpoint.entryId = row[0], row[1]
        message.upperEndpoint.ledgerId, message.upperEndpoint.entryId = row[2], row[3]
    return info.SerializeToString()


def _columns(ranges: WireRanges) -> tuple[np.ndarray, ...]:
    return ranges.lower_ledger, ranges.lower_entry, ranges.upper_ledger, ranges.upper_entry


def random_ranges(count: int, seed: int) -> WireRanges:
    """Mostly ordinary ids, with every width mixed in, so that batches change layout."""
    rng = np.random.default_rng(seed)
    bits = rng.choice([3, 10, 20, 35, 50, 62], size=(4, count), p=[0.1, 0.2, 0.4, 0.2, 0.05, 0.05])
    columns = rng.integers(0, 2**62, size=(4, count), dtype=np.int64) >> (62 - bits)
    columns[1, rng.random(count) < 0.01] = -1  # a range from entry 0: ten bytes
    return WireRanges(*columns)


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_message_ranges_are_protobufs_bytes_at_every_width(
    rows: list[tuple[int, int, int, int]],
) -> None:
    ranges = wire(rows)
    data = encode_position_info(PositionInfoContent(Position(7, 3), ranges))
    assert data == reference(ranges)
    assert decode_position_info(data).ranges.same_as(ranges)


@pytest.mark.parametrize("count", [16_384, 16_385, 70_001])
def test_many_ranges_across_batches_and_windows(count: int) -> None:
    ranges = random_ranges(count, seed=count)
    data = encode_position_info(PositionInfoContent(Position(7, 3), ranges))
    assert data == reference(ranges)
    assert decode_position_info(data).ranges.same_as(ranges)


def test_a_non_canonical_record_inside_a_long_run_is_read_and_the_run_resumes() -> None:
    ranges = random_ranges(40_000, seed=1)
    data = encode_position_info(PositionInfoContent(Position(7, 3), ranges))
    # Record 30 000 rewritten with its endpoints swapped: valid protobuf, not canonical.
    message = PositionInfo.FromString(data)
    swapped = message.individualDeletedMessages[30_000]
    record = swapped.SerializeToString()
    # 08 07 10 03, then each record with its tag and one-byte length.
    before = message.individualDeletedMessages[:30_000]
    head = 4 + sum(len(m.SerializeToString()) + 2 for m in before)
    low, high = swapped.lowerEndpoint.SerializeToString(), swapped.upperEndpoint.SerializeToString()
    reordered = bytes([0x12, len(high)]) + high + bytes([0x0A, len(low)]) + low
    assert len(reordered) == len(record)
    data = data[: head + 2] + reordered + data[head + 2 + len(record) :]
    assert decode_position_info(data).ranges.same_as(ranges)


def test_a_varint_past_64_bits_is_read_as_protobuf_reads_it() -> None:
    # (1:?, 1:0] with the lower entry's tenth byte 02 instead of 01: 65 bits, which the
    # vectorised path declines and protobuf reads (dropping the bit that does not fit).
    data = bytes.fromhex("080110001a150a0d080110ffffffffffffffffff02120408011000")
    low = PositionInfo.FromString(data).individualDeletedMessages[0].lowerEndpoint
    assert decode_position_info(data).ranges.same_as(wire([(1, low.entryId, 1, 0)]))


@settings(max_examples=200, deadline=None)
@given(ROWS, st.lists(st.integers(1, 40), max_size=12), st.binary(max_size=6))
def test_a_message_in_pieces_decodes_as_the_whole(
    rows: list[tuple[int, int, int, int]], cuts: list[int], tail: bytes
) -> None:
    """Any cut of the bytes into pieces, even through a varint or a record, decodes the same;
    and so do unknown or broken bytes at the end."""
    data = encode_position_info(PositionInfoContent(Position(7, 3), wire(rows))) + tail
    pieces, at = [], 0
    for cut in cuts:
        pieces.append(data[at : at + cut])
        at += cut
    pieces.append(data[at:])
    whole: PositionInfoContent | DecodeError
    try:
        whole = decode_position_info(data)
    except DecodeError as exc:
        whole = exc
    collected: list[WireRanges] = []
    with contextlib.suppress(DecodeError):
        content = decode_position_info_pieces(pieces, "test", collected.append)
        assert not isinstance(whole, DecodeError)
        assert content.mark_delete == whole.mark_delete
        assert WireRanges.concat(collected).same_as(whole.ranges)
        return
    assert isinstance(whole, DecodeError)


def sorted_runs(ledger_id: int, count: int, seed: int, scale: int) -> LedgerRuns:
    """`count` sorted, disjoint runs whose entries grow through several varint sizes."""
    rng = np.random.default_rng(seed)
    gaps = rng.integers(1, scale, count) if scale > 1 else np.ones(count, np.int64)
    lengths = rng.integers(0, 4, count)
    firsts = np.cumsum(gaps) + np.concatenate(([0], np.cumsum(lengths)[:-1]))
    firsts -= firsts[0]  # from entry 0: a lower endpoint of -1, ten bytes
    return ledger_id, firsts.astype(np.int64), (firsts + lengths).astype(np.int64)


@pytest.mark.parametrize(
    "runs",
    [
        [sorted_runs(5, 5000, 1, 9)],  # entries from 0 (lower endpoint -1) through 3 bytes
        [sorted_runs(2**40, 3000, 2, 2**20)],  # a long ledger id, entries up to 5 bytes
        [sorted_runs(77, 1500, 7, 2**40)],  # entries up to 8 bytes
        [sorted_runs(2**60, 1500, 3, 2**52)],  # and past 8 bytes: the general encoder
        [sorted_runs(-3, 2000, 4, 5)],  # a ledger id no writer uses still encodes
        [sorted_runs(i, n, i, 50) for i, n in enumerate([3, 1, 4000, 10, 70_000, 2], 1)],
    ],
)
def test_runs_encoded_by_shape_are_the_general_encoders_bytes(runs: list[LedgerRuns]) -> None:
    by_shape = b"".join(ledger_run_pieces(runs, 0x1A))
    ledgers = np.concatenate([np.full(firsts.size, ledger) for ledger, firsts, _ in runs])
    lower = np.concatenate([firsts for _, firsts, _ in runs]) - 1
    upper = np.concatenate([lasts for _, _, lasts in runs])
    ranges = WireRanges(ledgers.astype(np.int64), lower, ledgers.astype(np.int64), upper)
    assert by_shape == encode_message_ranges(ranges, 0x1A)
    data = encode_position_info(PositionInfoContent(Position(7, 3), ranges))
    assert data == reference(ranges)


def test_runs_out_of_order_fall_back_to_the_general_encoder() -> None:
    ledger_id, firsts, lasts = sorted_runs(9, 3000, 5, 20)
    shuffled = np.random.default_rng(6).permutation(firsts.size)
    runs = [(ledger_id, firsts[shuffled], lasts[shuffled])]
    ledgers = np.full(firsts.size, ledger_id, np.int64)
    ranges = WireRanges(ledgers, firsts[shuffled] - 1, ledgers, lasts[shuffled])
    assert b"".join(ledger_run_pieces(runs, 0x1A)) == encode_message_ranges(ranges, 0x1A)


@pytest.mark.parametrize("seed", range(60))
def test_corrupted_stretches_decode_as_protobuf_reads_them_or_not_at_all(seed: int) -> None:
    """Long stretches of one layout are checked row by row: whatever two flipped bits
    anywhere make of them, what we decode is what protobuf decodes, or a DecodeError."""
    runs = [sorted_runs(ledger, 3000, seed + ledger, 40) for ledger in (2**20, 2**20 + 1)]
    ledgers = np.concatenate([np.full(firsts.size, ledger) for ledger, firsts, _ in runs])
    lower = np.concatenate([firsts for _, firsts, _ in runs]) - 1
    upper = np.concatenate([lasts for _, _, lasts in runs])
    ranges = WireRanges(ledgers.astype(np.int64), lower, ledgers.astype(np.int64), upper)
    data = bytearray(encode_position_info(PositionInfoContent(Position(7, 3), ranges)))
    rng = np.random.default_rng(seed)
    for at in rng.integers(4, len(data), 2):
        data[at] ^= 1 << int(rng.integers(0, 8))
    try:
        ours = decode_position_info(bytes(data))
    except DecodeError:
        return
    theirs = PositionInfo.FromString(bytes(data))
    messages = theirs.individualDeletedMessages
    low, high = [m.lowerEndpoint for m in messages], [m.upperEndpoint for m in messages]
    rows = [(a.ledgerId, a.entryId, b.ledgerId, b.entryId) for a, b in zip(low, high, strict=True)]
    assert ours.ranges.same_as(wire(rows))


def test_ranges_are_handed_on_a_few_records_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire_scan, "_RUN_BYTES", 100_000)
    runs = [sorted_runs(ledger, 20_000, ledger, 30) for ledger in (3, 4, 5)]
    ledgers = np.concatenate([np.full(firsts.size, ledger) for ledger, firsts, _ in runs])
    lower = np.concatenate([firsts for _, firsts, _ in runs]) - 1
    upper = np.concatenate([lasts for _, _, lasts in runs])
    ranges = WireRanges(ledgers.astype(np.int64), lower, ledgers.astype(np.int64), upper)
    data = encode_position_info(PositionInfoContent(Position(7, 3), ranges)) + NEWER_FIELD
    handed: list[WireRanges] = []
    content = decode_position_info_pieces([data], "test", handed.append)
    assert len(handed) > len(data) // 200_000  # in steps of about 100 kB of records
    assert max(len(batch) for batch in handed) * 14 < 100_000 + (1 << 18) * 42
    assert WireRanges.concat(handed).same_as(ranges) and content.mark_delete == Position(7, 3)


NEWER_FIELD = bytes.fromhex("7a026869")  # field 15, "hi": a field a newer Pulsar might add
