"""PIP-81 in the embedded ledger store: per-ledger entries, a marker, only dirty ledgers
rewritten, torn flushes passed over, and an LRU that swaps ledgers' acks in and out."""

from __future__ import annotations

import numpy as np
import pytest

from cursor import AckState, CursorSettings, PersistReport, Position, RangeEncoding
from cursor.ack import SwappingBitmaps
from cursor.persistence import IncrementalPersistence, WrittenState
from cursor.wire.ack_index import MARKER
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.wire.proto.ml_data_formats_pb2 import PositionInfo
from harness.crashing import CrashingLedgers, SimulatedCrash, Trap
from tests.unit.cursor.test_codec_round_trip import same_acks

LEDGERS = range(20, 30)


def settings(**changes: object) -> CursorSettings:
    base: dict[str, object] = {"multiple_entries": True, "max_entry_size": 4096}
    return CursorSettings(**(base | changes))  # type: ignore[arg-type]


def fresh(ledgers: SqliteLedgerStorage, config: CursorSettings) -> IncrementalPersistence:
    persistence = IncrementalPersistence(ledgers, config)
    persistence.ledger_id = ledgers.create_ledger({})
    return persistence


def seeded(state: AckState, seed: int) -> AckState:
    rng = np.random.default_rng(seed)
    for ledger_id in LEDGERS:
        state.ack_entries(ledger_id, np.unique(rng.integers(0, 3000, 400)).astype(np.int64))
    return state


def same_everywhere(a: AckState, b: AckState) -> None:
    """Compare through the public reads: works whatever is swapped in or out."""
    assert a.mark_delete == b.mark_delete and a.range_count == b.range_count
    assert a.ledger_ids() == b.ledger_ids()
    for ledger_id in a.ledger_ids():
        left, right = a.bitmaps.get(ledger_id), b.bitmaps.get(ledger_id)
        assert left is not None and right is not None
        assert np.array_equal(left.java_words(), right.java_words()), ledger_id


@pytest.mark.parametrize("encoding", list(RangeEncoding))
def test_a_flush_rewrites_only_the_ledgers_that_changed(
    ledgers: SqliteLedgerStorage, encoding: RangeEncoding
) -> None:
    persistence = fresh(ledgers, settings(range_encoding=encoding, max_entry_size=1 << 16))
    state = seeded(AckState(Position(19, 0)), seed=1)
    assert persistence.flush(state).entries == len(LEDGERS) + 1
    state.ack(Position(23, 5000))
    second = persistence.flush(state)
    assert second.entries == 2  # ledger 23's entry and the marker
    assert persistence.flush(state).entries == 1  # nothing changed: the marker only
    marker = PositionInfo.FromString(ledgers.read(second.ledger_id)[-1])
    # An unchanged reader sees a mark-delete position and no individual acks.
    assert (marker.ledgerId, marker.entryId) == (19, 0)
    assert not marker.individualDeletedMessages and not marker.individualDeletedMessageRanges
    assert any(p.name == MARKER for p in marker.properties)
    recovered = IncrementalPersistence(ledgers, settings()).recover(second.ledger_id, None)
    same_acks(recovered.state, state)


def test_a_flush_cut_short_at_any_point_recovers_the_previous_marker(
    ledgers: SqliteLedgerStorage,
) -> None:
    for crash_at in range(1, len(LEDGERS) + 2):
        persistence = fresh(ledgers, settings())
        before = seeded(AckState(Position(19, 0)), seed=2)
        persistence.flush(before)
        snapshot = (
            IncrementalPersistence(ledgers, settings())
            .recover(persistence.ledger_id or 0, None)
            .state
        )
        seeded(before, seed=3)  # every ledger dirty again
        torn = IncrementalPersistence(CrashingLedgers(ledgers, Trap(crash_at)), settings())
        torn.adopt(WrittenState(persistence.ledger_id or 0, _report(), 0, persistence.index))
        with pytest.raises(SimulatedCrash):
            torn.flush(before)
        recovered = IncrementalPersistence(ledgers, settings()).recover(
            persistence.ledger_id or 0, None
        )
        same_acks(recovered.state, snapshot)
        assert recovered.skipped == crash_at - 1


def test_mark_delete_past_a_ledger_drops_it_from_the_index(ledgers: SqliteLedgerStorage) -> None:
    persistence = fresh(ledgers, settings())
    state = seeded(AckState(Position(19, 0)), seed=4)
    persistence.flush(state)
    state.mark_delete_to(Position(25, 1500))
    persistence.flush(state)
    assert min(persistence.index) == 25
    recovered = IncrementalPersistence(ledgers, settings()).recover(
        persistence.ledger_id or 0, None
    )
    same_acks(recovered.state, state)


def test_the_lru_keeps_memory_within_budget_and_loses_nothing(
    ledgers: SqliteLedgerStorage,
) -> None:
    config = settings(lru_cache=True, max_ack_cache_bytes=1200)
    reference = seeded(AckState(Position(19, 0)), seed=5)
    persistence = fresh(ledgers, config)
    store = SwappingBitmaps(config.max_ack_cache_bytes, persistence)
    state = AckState(Position(19, 0), bitmaps=store)
    persistence.attach(state)
    seeded(state, seed=5)
    assert store.swaps_out > 0 and store.used_bytes <= 1200 + 600
    persistence.flush(state)
    rng = np.random.default_rng(6)
    for _ in range(300):  # acks all over: swap in, evict (writing dirty ledgers first)
        position = Position(int(rng.choice(LEDGERS)), int(rng.integers(0, 4000)))
        state.ack(position)
        reference.ack(position)
    assert store.swaps_in > 0
    same_everywhere(state, reference)
    persistence.flush(state)
    recovered = IncrementalPersistence(ledgers, config).recover(persistence.ledger_id or 0, None)
    lazy = recovered.state.bitmaps
    assert isinstance(lazy, SwappingBitmaps)
    assert sum(lazy.loaded(i) for i in LEDGERS) < len(LEDGERS)  # not everything was read
    same_everywhere(recovered.state, reference)


def test_a_rotation_copies_swapped_out_ledgers_into_the_new_ledger(
    ledgers: SqliteLedgerStorage,
) -> None:
    config = settings(lru_cache=True, max_ack_cache_bytes=1000)
    persistence = fresh(ledgers, config)
    state = AckState(Position(19, 0), bitmaps=SwappingBitmaps(1000, persistence))
    persistence.attach(state)
    seeded(state, seed=7)
    persistence.flush(state)
    new_ledger = ledgers.create_ledger({})
    written = persistence.write_into(state, new_ledger)
    persistence.adopt(written)
    recovered = IncrementalPersistence(ledgers, settings()).recover(new_ledger, None)
    same_everywhere(recovered.state, seeded(AckState(Position(19, 0)), seed=7))


def _report() -> PersistReport:
    return PersistReport(RangeEncoding.LONG_LIST_MAP, 0, 0)


def test_ledgers_over_the_cap_stay_swappable_but_out_of_the_marker(
    ledgers: SqliteLedgerStorage,
) -> None:
    config = settings(lru_cache=True, max_ack_cache_bytes=800, max_unacked_ranges_to_persist=700)
    persistence = fresh(ledgers, config)
    state = AckState(Position(19, 0), bitmaps=SwappingBitmaps(800, persistence))
    persistence.attach(state)
    seeded(state, seed=8)  # ten ledgers of ~330 ranges: two fit under the cap
    report = persistence.flush(state).report
    assert sorted(persistence.index) == [20, 21] and report.truncated
    assert report.ranges_persisted == sum(state.bitmaps.runs_of(i) for i in (20, 21))
    # Every ledger, marked or not, swaps back in with all its acks.
    same_everywhere(state, seeded(AckState(Position(19, 0)), seed=8))
    recovered = IncrementalPersistence(ledgers, settings()).recover(
        persistence.ledger_id or 0, None
    )
    assert recovered.state.ledger_ids() == [20, 21]


@pytest.mark.parametrize("seed", range(6))
def test_random_work_under_a_tight_lru_matches_an_in_memory_state(
    ledgers: SqliteLedgerStorage, seed: int
) -> None:
    """Acks, batch acks, cumulative acks, flushes and rotations, interleaved at random: the
    swapping state, and every state recovered from the ledger, match a plain one."""
    rng = np.random.default_rng(seed)
    config = settings(
        lru_cache=True,
        max_ack_cache_bytes=int(rng.choice([300, 800])),
        max_entry_size=int(rng.choice([200, 1000, 100_000])),
        range_encoding=list(RangeEncoding)[seed % 2],
        batch_index_level=True,
        compression=int(rng.choice([0, 1, 3])),
    )
    persistence = fresh(ledgers, config)
    swapping = SwappingBitmaps(config.max_ack_cache_bytes, persistence)
    state = AckState(Position(5, -1), bitmaps=swapping, batch_index_level=True)
    persistence.attach(state)
    plain = AckState(Position(5, -1), batch_index_level=True)
    reader = settings(max_entry_size=config.max_entry_size, batch_index_level=True)
    for _ in range(300):
        roll = rng.random()
        position = Position(int(rng.integers(5, 15)), int(rng.integers(0, 800)))
        if roll < 0.65:
            state.ack(position)
            plain.ack(position)
        elif roll < 0.75:
            last = position.entry_id + int(rng.integers(0, 50))
            state.ack_range(position.ledger_id, position.entry_id, last)
            plain.ack_range(position.ledger_id, position.entry_id, last)
        elif roll < 0.8:
            index = [int(rng.integers(0, 8))]
            state.ack_batch_index(position, 8, index)
            plain.ack_batch_index(position, 8, index)
        elif roll < 0.83:
            floor = Position(int(rng.integers(5, 10)), int(rng.integers(0, 800)))
            state.mark_delete_to(floor)
            plain.mark_delete_to(floor)
        elif roll < 0.95:
            persistence.flush(state)
            recovered = IncrementalPersistence(ledgers, config).recover(
                persistence.ledger_id or 0, None
            )
            same_everywhere(recovered.state, plain)
        else:
            persistence.adopt(persistence.write_into(state, ledgers.create_ledger({})))
            recovered = IncrementalPersistence(ledgers, reader).recover(
                persistence.ledger_id or 0, None
            )
            same_everywhere(recovered.state, plain)
    assert swapping.swaps_out > 0
    same_everywhere(state, plain)
    assert state.batch_indexes() == plain.batch_indexes()
