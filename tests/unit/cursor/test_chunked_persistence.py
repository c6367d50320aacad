"""PIP-381 in the embedded ledger store: one entry when small, chunks and a footer when not,
and recovery that falls back to the previous complete state after a crash at any point."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from core.errors import DecodeError
from cursor import AckState, CursorSettings, NoCompleteStateError, Position, RangeEncoding
from cursor.persistence import (
    FullStatePersistence,
    RangeCollector,
    capture,
    chunking,
    last_entry_id,
    streamed,
)
from cursor.wire import WireRanges, encode_state
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, PositionInfo
from harness.crashing import CrashingLedgers, SimulatedCrash, Trap
from tests.unit.cursor.test_codec_round_trip import same_acks

CHUNK = 512


def settings(compression: int = CompressionType.NONE) -> CursorSettings:
    return CursorSettings(
        max_entry_size=CHUNK,
        range_encoding=RangeEncoding.MESSAGE_RANGE,
        compression=compression,  # type: ignore[arg-type]
    )


def state_with(ranges: int, seed: int) -> AckState:
    rng = np.random.default_rng(seed)
    state = AckState(Position(10, 5))
    gaps = rng.integers(2, 9, ranges)
    state.ack_entries(11, np.cumsum(gaps).astype(np.int64))
    return state


def persistence(ledgers: SqliteLedgerStorage, compression: int = 0) -> FullStatePersistence:
    persisted = FullStatePersistence(ledgers, settings(compression))
    persisted.ledger_id = ledgers.create_ledger({})
    return persisted


def test_a_small_state_is_one_entry_an_unchanged_reader_understands(
    ledgers: SqliteLedgerStorage,
) -> None:
    persisted = persistence(ledgers)
    written = persisted.flush(state_with(5, seed=1))
    assert written.entries == 1
    [entry] = ledgers.read(written.ledger_id)
    legacy = PositionInfo.FromString(entry)
    assert (legacy.ledgerId, legacy.entryId) == (10, 5) and len(
        legacy.individualDeletedMessages
    ) == 5


def test_a_large_state_is_chunks_then_a_footer(ledgers: SqliteLedgerStorage) -> None:
    persisted = persistence(ledgers)
    state = state_with(400, seed=2)
    written = persisted.flush(state)
    entries = ledgers.read(written.ledger_id)
    footer = json.loads(entries[-1])
    assert footer == {"numParts": len(entries) - 1, "length": written.report.payload_bytes}
    assert all(len(chunk) == CHUNK for chunk in entries[:-2]) and len(entries[-2]) <= CHUNK
    recovered = persisted.recover(written.ledger_id, None)
    assert (recovered.entry_id, recovered.skipped) == (len(entries) - 1, 0)
    same_acks(recovered.state, state)


@pytest.mark.parametrize("compression", [CompressionType.NONE, CompressionType.ZSTD])
def test_a_crash_at_every_point_of_a_chunked_write_recovers_the_previous_state(
    ledgers: SqliteLedgerStorage, compression: int
) -> None:
    before, after = state_with(300, seed=3), state_with(900, seed=4)
    probe = persistence(ledgers, compression)
    steps = probe.flush(after).entries
    assert steps > 2
    for crash_at in range(1, steps + 1):
        trap = Trap(crash_at)
        ledger_id = ledgers.create_ledger({})
        good = FullStatePersistence(ledgers, settings(compression))
        good.ledger_id = ledger_id
        good.flush(before)
        first_torn = last_entry_id(ledgers, ledger_id) + 1
        torn = FullStatePersistence(CrashingLedgers(ledgers, trap), settings(compression))
        torn.ledger_id = ledger_id
        with pytest.raises(SimulatedCrash):
            torn.flush(after)
        recovered = FullStatePersistence(ledgers, settings(compression)).recover(ledger_id, None)
        same_acks(recovered.state, before)
        assert recovered.entry_id == first_torn - 1
        assert recovered.skipped == crash_at - 1
    # And with no crash, the newer state wins.
    same_acks(
        FullStatePersistence(ledgers, settings()).recover(probe.ledger_id or 0, None).state, after
    )


def test_a_corrupt_tail_falls_back_to_the_state_before_it(ledgers: SqliteLedgerStorage) -> None:
    persisted = persistence(ledgers)
    before = state_with(300, seed=5)
    persisted.flush(before)
    ledger_id = persisted.ledger_id or 0
    persisted.flush(state_with(600, seed=6))
    # A chunk of the newest sequence is corrupted: its footer's length no longer adds up.
    newest = ledgers.read(ledger_id)
    ledgers.append(ledger_id, newest[-2][:-1])
    ledgers.append(ledger_id, newest[-1])
    # And an entry that is not a state at all.
    ledgers.append(ledger_id, b"\x7a\x00garbage")
    recovered = persistence(ledgers).recover(ledger_id, None)
    assert recovered.skipped > 0
    same_acks(recovered.state, state_with(600, seed=6))


def test_a_ledger_without_any_complete_state_says_so(ledgers: SqliteLedgerStorage) -> None:
    ledger_id = ledgers.create_ledger({})
    ledgers.append(ledger_id, b"\x00" * CHUNK)
    ledgers.append(ledger_id, b'{"numParts":5,"length":3}')
    with pytest.raises(NoCompleteStateError):
        persistence(ledgers).recover(ledger_id, None)
    with pytest.raises(NoCompleteStateError):
        persistence(ledgers).recover(ledgers.create_ledger({}), None)


def test_a_million_ranges_persist_and_recover_losslessly_in_chunks(
    ledgers: SqliteLedgerStorage,
) -> None:
    state = AckState(Position(1, 0))
    for ledger_id in range(2, 42):  # 40 ledgers of 25 000 holes each
        state.ack_entries(ledger_id, np.arange(1, 50_000, 2, dtype=np.int64))
    assert state.range_count == 1_000_000
    for encoding in RangeEncoding:
        config = CursorSettings(
            max_unacked_ranges_to_persist=2**31 - 1,
            max_entry_size=1_048_576,
            range_encoding=encoding,
            compression=CompressionType.LZ4,
        )
        persisted = FullStatePersistence(ledgers, config)
        persisted.ledger_id = ledgers.create_ledger({})
        written = persisted.flush(state)
        assert not written.report.truncated
        if encoding is RangeEncoding.MESSAGE_RANGE:
            assert written.entries > 2  # chunks and a footer
        same_acks(persisted.recover(written.ledger_id, None).state, state)


@pytest.mark.parametrize(
    ("cap", "chunk", "compression"),
    [
        (2**31 - 1, CHUNK, CompressionType.NONE),
        (2**31 - 1, 14 * 3001, CompressionType.NONE),
        (1000, 4096, CompressionType.NONE),
        (2500, 777, CompressionType.NONE),
        (2**31 - 1, CHUNK, CompressionType.ZSTD),
        (1000, 14 * 1000, CompressionType.LZ4),
    ],
)
def test_a_streamed_write_appends_exactly_the_entries_of_the_whole_payload(
    ledgers: SqliteLedgerStorage, cap: int, chunk: int, compression: int
) -> None:
    """Streamed (never holding the payload, or the ranges as columns) or not, the entries
    are the same bytes."""
    state = state_with(3000, seed=7)
    state.ack_range(12, 0, 4)  # a range from entry 0: its lower endpoint takes ten bytes
    config = CursorSettings(
        max_unacked_ranges_to_persist=cap,
        max_entry_size=chunk,
        range_encoding=RangeEncoding.MESSAGE_RANGE,
        compression=compression,  # type: ignore[arg-type]
    )
    assert streamed.streams(state, config)
    target = ledgers.create_ledger({})
    report, written = streamed.write_streamed(ledgers, target, state, config)
    content, whole_report = capture(state, RangeEncoding.MESSAGE_RANGE, cap)
    payload = encode_state(content, compression, chunk)  # type: ignore[arg-type]
    reference = ledgers.create_ledger({})
    chunking.write(ledgers, reference, payload, chunk)
    streamed_entries = ledgers.read(target)
    assert streamed_entries == ledgers.read(reference)
    assert report.payload_bytes == len(payload) == written.payload_bytes
    assert report.ranges_persisted == whole_report.ranges_persisted == min(cap, 3001)
    assert report.entries_written == len(streamed_entries)
    recovered = FullStatePersistence(ledgers, config).recover(target, None).state
    if cap > 3001:
        same_acks(recovered, state)


@given(st.lists(st.binary(max_size=50), max_size=20), st.integers(1, 60))
@hypothesis_settings(max_examples=200, deadline=None)
def test_pieces_are_cut_into_the_entries_of_their_concatenation(
    pieces: list[bytes], chunk: int
) -> None:
    appended: list[bytes] = []

    class Recorder:
        def append(self, ledger_id: int, data: bytes) -> int:
            appended.append(bytes(data))
            return len(appended) - 1

    written = chunking.write_pieces(Recorder(), 1, pieces, chunk)  # type: ignore[arg-type]
    payload = b"".join(pieces)
    assert appended == chunking.split(payload, chunk)
    assert (written.entries, written.entry_id, written.payload_bytes) == (
        len(appended),
        len(appended) - 1,
        len(payload),
    )


def test_recovery_reads_a_chunked_state_a_chunk_at_a_time(ledgers: SqliteLedgerStorage) -> None:
    persisted = persistence(ledgers)
    state = state_with(2000, seed=8)
    written = persisted.flush(state)
    reads: list[tuple[int, int | None]] = []

    class Counting:
        def read(self, ledger_id: int, first: int = 0, last: int | None = None) -> list[bytes]:
            reads.append((first, last))
            return ledgers.read(ledger_id, first, last)

    found = chunking.find_latest_pieces(
        Counting(),  # type: ignore[arg-type]
        written.ledger_id,
        CHUNK,
        lambda pieces, _: [len(piece) for piece in pieces],
    )
    assert found.value == [CHUNK] * (written.entries - 2) + [found.value[-1]]
    assert all(last == first for first, last in reads)  # never two entries in one read


def test_an_invalid_range_fails_recovery_before_anything_is_acknowledged() -> None:
    bad = WireRanges(*(np.array(c, np.int64) for c in ([11, 12], [3, -5], [11, 12], [9, 2])))
    collector = RangeCollector.of(bad)
    state = AckState(Position(10, 5))
    with pytest.raises(DecodeError, match="before entry 0"):
        collector.apply(state)
    assert state.range_count == 0 and state.ledger_ids() == []


ROWS = st.tuples(st.integers(11, 14), st.integers(0, 300), st.integers(0, 5))


@given(st.lists(ROWS, max_size=40))
@hypothesis_settings(max_examples=200, deadline=None)
def test_ranges_in_any_order_and_batches_ack_what_one_sorted_batch_does(
    rows: list[tuple[int, int, int]],
) -> None:
    columns = [[r[0] for r in rows], [r[1] - 1 for r in rows], [r[0] for r in rows]]
    columns.append([r[1] + r[2] for r in rows])
    ranges = WireRanges(*(np.array(c, np.int64) for c in columns))
    expected = AckState(Position(10, 5))
    for ledger_id, first, extra in rows:
        expected.ack_range(ledger_id, first, first + extra)
    in_batches = RangeCollector()
    for start in range(0, len(rows), 7):
        in_batches.add(WireRanges(*(c[start : start + 7] for c in _columns(ranges))))
    for collector in (RangeCollector.of(ranges), in_batches):
        state = AckState(Position(10, 5))
        collector.apply(state)
        same_acks(state, expected)


def _columns(ranges: WireRanges) -> tuple[np.ndarray, ...]:
    return ranges.lower_ledger, ranges.lower_entry, ranges.upper_ledger, ranges.upper_entry
