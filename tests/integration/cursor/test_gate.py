"""PIP-299: dispatch pauses while the ack state cannot be persisted in full."""

from __future__ import annotations

from cursor import AckState, AckStateGate, CursorSettings, DurableCursor, Position
from harness.cursor_fixtures import CursorEnv
from tests.integration.cursor.test_cli import NothingToDelete


def test_the_gate_closes_above_the_cap_and_reopens_when_acks_bring_it_back() -> None:
    state = AckState(Position(1, -1))
    gate = AckStateGate(state, max_ranges=2, enabled=True)
    resumed: list[bool] = []
    gate.on_resume(lambda: resumed.append(True))
    for entry in (1, 3, 5):
        state.ack(Position(1, entry))
    assert state.range_count == 3
    assert not gate.may_dispatch() and gate.blocked_on_ack_state_persistent
    gate.after_acks()
    assert gate.blocked_on_ack_state_persistent and resumed == []
    state.ack(Position(1, 4))  # 3..5 merge: two ranges left, which fits
    gate.after_acks()
    assert not gate.blocked_on_ack_state_persistent and resumed == [True]
    assert gate.may_dispatch()


def test_exactly_the_cap_is_still_fully_persistable() -> None:
    state = AckState(Position(1, -1))
    gate = AckStateGate(state, max_ranges=2, enabled=True)
    state.ack(Position(1, 1))
    state.ack(Position(1, 3))
    assert gate.may_dispatch()


def test_disabled_the_gate_never_closes() -> None:
    state = AckState(Position(1, -1))
    gate = AckStateGate(state, max_ranges=0, enabled=False)
    state.ack(Position(1, 1))
    assert gate.may_dispatch() and not gate.blocked_on_ack_state_persistent


def test_a_durable_cursor_pauses_dispatch_until_acks_make_its_state_fit(
    cursor_env: CursorEnv,
) -> None:
    settings = CursorSettings(max_unacked_ranges_to_persist=2, pause_on_ack_state_persistent=True)
    stores = cursor_env.stores(NothingToDelete())
    cursor = DurableCursor.open(
        cursor_env.topic, "sub", stores, settings, initial_mark_delete=Position(7, -1)
    )
    cursor.ack([Position(7, 1), Position(7, 3), Position(7, 5)])
    assert not cursor.may_dispatch() and cursor.gate.blocked_on_ack_state_persistent
    report = cursor.persist()
    assert report.truncated and report.ranges_persisted == 2
    cursor.ack([Position(7, 0)])  # folds 0..1 into the mark-delete position: two ranges left
    assert cursor.may_dispatch() and not cursor.gate.blocked_on_ack_state_persistent
    assert not cursor.persist().truncated
