"""PIP-381 in the embedded ledger store: one entry when small, chunks and a footer when not,
and recovery that falls back to the previous complete state after a crash at any point."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cursor import AckState, CursorSettings, NoCompleteStateError, Position, RangeEncoding
from cursor.persistence import FullStatePersistence, last_entry_id
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
