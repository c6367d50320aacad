"""Acknowledgment semantics: folding into the mark-delete position, batch indexes (PIP-54),
cumulative acks, and folding across ledgers when the layout is known."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cursor import AckState, AckStateError, LedgerLayout, Position

LEDGERS = (3, 4, 5)
POSITIONS = st.builds(Position, st.sampled_from(LEDGERS), st.integers(0, 60))


def acked(state: AckState) -> set[Position]:
    return {
        Position(g, e) for g in range(2, 7) for e in range(-1, 70) if state.is_acked(Position(g, e))
    }


def test_an_ack_next_to_the_mark_delete_position_folds_the_whole_run() -> None:
    state = AckState(Position(3, 4))
    state.ack(Position(3, 7))
    state.ack(Position(3, 6))
    assert state.range_count == 1 and state.mark_delete == Position(3, 4)
    state.ack(Position(3, 5))
    assert state.mark_delete == Position(3, 7)
    assert state.range_count == 0 and state.ledger_ids() == []


def test_acks_at_or_before_the_mark_delete_position_change_nothing() -> None:
    state = AckState(Position(3, 4))
    assert not state.ack(Position(3, 4))
    assert not state.ack(Position(2, 100))
    assert state.take_dirty() == set()


def test_without_a_layout_folding_stops_at_the_ledger_boundary() -> None:
    state = AckState(Position(3, 9))
    state.ack(Position(4, 0))
    assert state.mark_delete == Position(3, 9) and state.range_count == 1


def test_with_a_layout_folding_crosses_closed_ledgers() -> None:
    layout = LedgerLayout([(3, 9), (4, 2), (5, None)])
    state = AckState(Position(3, 8), layout=layout)
    state.ack_range(4, 0, 2)
    state.ack(Position(5, 0))
    assert state.range_count == 2
    state.ack(Position(3, 9))
    assert state.mark_delete == Position(5, 0) and state.range_count == 0


def test_a_batch_becomes_an_acked_entry_when_its_last_index_is_acked() -> None:
    state = AckState(Position(3, 0), batch_index_level=True)
    assert not state.ack_batch_index(Position(3, 5), 4, [0, 2])
    assert state.batch_indexes() == {Position(3, 5): 0b1010}  # set bit = still unacked
    assert state.is_batch_index_acked(Position(3, 5), 2)
    assert not state.is_batch_index_acked(Position(3, 5), 1)
    assert not state.is_acked(Position(3, 5))
    assert state.ack_batch_index(Position(3, 5), 4, [1, 3])
    assert state.is_acked(Position(3, 5)) and state.batch_indexes() == {}


def test_batch_index_acks_off_track_nothing() -> None:
    state = AckState(Position(3, 0))
    assert not state.ack_batch_index(Position(3, 5), 4, [0, 1, 2, 3])
    assert state.batch_indexes() == {} and not state.is_acked(Position(3, 5))


def test_an_index_outside_its_batch_is_refused() -> None:
    state = AckState(Position(3, 0), batch_index_level=True)
    with pytest.raises(AckStateError):
        state.ack_batch_index(Position(3, 5), 4, [4])


def test_cumulative_ack_drops_passed_ledgers_entries_and_batches() -> None:
    state = AckState(Position(3, 0), batch_index_level=True)
    state.ack_entries(3, np.array([5, 7, 9], np.int64))
    state.ack(Position(4, 3))
    state.ack_batch_index(Position(4, 6), 2, [0])
    state.mark_delete_to(Position(4, 6), {"p": 1})
    assert state.ledger_ids() == [] and state.range_count == 0
    assert state.mark_delete == Position(4, 6) and state.properties == {"p": 1}
    assert state.batch_indexes() == {}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("ack"), POSITIONS),
            st.tuples(st.just("range"), POSITIONS, st.integers(0, 8)),
            st.tuples(st.just("cumulative"), POSITIONS),
        ),
        max_size=60,
    )
)
def test_state_matches_a_set_of_positions(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    state, model, floor = AckState(Position(3, -1)), set[Position](), Position(3, -1)
    for op in ops:
        if op[0] == "ack":
            state.ack(op[1])
            model.add(op[1])
        elif op[0] == "range":
            state.ack_range(op[1].ledger_id, op[1].entry_id, op[1].entry_id + op[2])
            model.update(
                Position(op[1].ledger_id, e)
                for e in range(op[1].entry_id, op[1].entry_id + op[2] + 1)
            )
        else:
            state.mark_delete_to(op[1])
            floor = max(floor, op[1])
        # Folding: the mark-delete position moves over what directly follows it.
        while Position(floor.ledger_id, floor.entry_id + 1) in model:
            floor = Position(floor.ledger_id, floor.entry_id + 1)
        assert state.mark_delete == floor
        expected = {p for p in model if p > floor} | {
            Position(g, e) for g in range(2, 7) for e in range(-1, 70) if Position(g, e) <= floor
        }
        assert acked(state) == expected
        # A range never touches the mark-delete position.
        assert not state.is_acked(Position(floor.ledger_id, floor.entry_id + 1))
        runs = sum(
            1
            for p in expected
            if p > floor and Position(p.ledger_id, p.entry_id - 1) not in expected
        )
        assert state.range_count == runs
