"""Cursor-ledger rotation under crashes and failures: every crash point, unreadable and failed
ledgers, the znode as the last resort, and phase two deleting what rotation released."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cursor import (
    CursorInfoContent,
    CursorMetadata,
    CursorSettings,
    DurableCursor,
    Position,
    RangeEncoding,
    WireRanges,
)
from deletion.domain.outcome import Outcome
from harness.crashing import (
    CrashingLedgers,
    CrashingMetadata,
    RecordingDeletions,
    SimulatedCrash,
    Trap,
)
from harness.cursor_fixtures import CursorEnv
from harness.janitor import JanitorFactory, Recorder
from tests.integration.cursor.rotation_rig import (
    ack_some,
    assert_nothing_referenced_is_deletable,
    deletions,
    referenced_ledger,
)
from tests.unit.cursor.test_codec_round_trip import same_acks

__all__ = ["deletions"]  # the fixtures


def test_an_unreadable_cursor_ledger_falls_back_to_the_znode(
    cursor_env: CursorEnv, deletions: RecordingDeletions
) -> None:
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions))
    cursor.mark_delete(Position(7, 10))
    cursor.rotate()  # the znode now records mark-delete 7:10
    cursor.ack([Position(7, 12)])
    cursor.persist()
    cursor_env.ledgers.delete_ledger(cursor.ledger_id or 0)  # lost, as a deleted ledger would be
    reopened = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions))
    assert reopened.state.mark_delete == Position(7, 10)
    assert not reopened.state.is_acked(Position(7, 12))  # redelivered: never taken for acked


@pytest.mark.parametrize(
    "layout",
    [
        {"multiple_entries": False},
        {"multiple_entries": True},
        {"multiple_entries": True, "lru_cache": True, "max_ack_cache_bytes": 2000},
    ],
    ids=["pip381", "pip81", "pip81-lru"],
)
def test_a_crash_at_every_point_of_a_rotation_loses_nothing_and_deletes_nothing_referenced(
    cursor_env: CursorEnv, janitor: JanitorFactory, layout: dict[str, Any]
) -> None:
    sidecar = janitor.sidecar(**cursor_env.sidecar_settings())
    # MessageRanges of 300 holes take ~6 kB: the rotation's write is a chunk sequence.
    settings = CursorSettings(
        max_entry_size=2048, range_encoding=RangeEncoding.MESSAGE_RANGE, **layout
    )
    crash_at, steps_seen = 1, None
    while steps_seen is None or crash_at <= len(steps_seen):
        name = f"sub-{crash_at}"
        trap = Trap()
        recorder = RecordingDeletions(sidecar.phase_one, trap)
        stores = cursor_env.stores(recorder)
        crashing = type(stores)(
            CrashingMetadata(stores.metadata, trap),
            CrashingLedgers(cursor_env.ledgers, trap),
            recorder,
        )
        cursor = DurableCursor.open(cursor_env.topic, name, crashing, settings)
        ack_some(cursor, crash_at)
        cursor.persist()
        expected = cursor.state  # as flushed: the rotation writes the same state
        trap.steps.clear()
        if steps_seen is None:  # a first, uncrashed run counts the steps of a rotation
            cursor.rotate()
            steps_seen = list(trap.steps)
            assert steps_seen[0] == "create_ledger" and steps_seen[-1] == "close_ledger"
            continue
        trap.at = crash_at
        with pytest.raises(SimulatedCrash):
            cursor.rotate()
        assert_nothing_referenced_is_deletable(cursor_env, [recorder])
        reopened_by = RecordingDeletions(sidecar.phase_one)
        reopened = DurableCursor.open(
            cursor_env.topic, name, cursor_env.stores(reopened_by), settings
        )
        same_acks(reopened.state, expected)
        assert referenced_ledger(cursor_env, name) == reopened.ledger_id
        assert_nothing_referenced_is_deletable(cursor_env, [recorder, reopened_by])
        crash_at += 1
    assert steps_seen is not None and steps_seen.count("append") >= 4
    assert {"phase_one", "commit", "compare_and_set"} <= set(steps_seen)


def test_phase_two_deletes_rotated_cursor_ledgers_and_keeps_the_current_one(
    cursor_env: CursorEnv, janitor: JanitorFactory, deletions: RecordingDeletions
) -> None:
    settings = CursorSettings(max_entries_per_ledger=1)
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions), settings)
    for seed in range(2):
        ack_some(cursor, seed)
        cursor.persist()
    old = deletions.ledger_ids
    assert len(old) == 2 and cursor.ledger_id not in old
    recorder = Recorder()
    janitor.worker(recorder, **cursor_env.sidecar_settings())
    recorder.wait_for(lambda results: sum(r.outcome is Outcome.DELETED for r in results) == 2)
    assert all(cursor_env.ledgers.ledger(i) is None for i in old)
    assert cursor_env.ledgers.ledger(cursor.ledger_id or 0) is not None
    reopened = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions), settings)
    same_acks(reopened.state, cursor.state)


@pytest.mark.parametrize("multiple_entries", [False, True], ids=["pip381", "pip81"])
def test_a_failed_append_moves_the_cursor_to_a_new_ledger(
    cursor_env: CursorEnv, deletions: RecordingDeletions, multiple_entries: bool
) -> None:
    settings = CursorSettings(multiple_entries=multiple_entries)
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions), settings)
    old = cursor.ledger_id
    cursor_env.ledgers.close_ledger(old or 0)  # appends to it now fail, as after a BK error
    ack_some(cursor, 3)
    report = cursor.persist()
    assert not report.truncated and cursor.ledger_id != old and deletions.ledger_ids == [old]
    reopened = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions), settings)
    same_acks(reopened.state, cursor.state)


def test_a_cursor_closed_into_its_znode_reopens_from_it(
    cursor_env: CursorEnv, deletions: RecordingDeletions
) -> None:
    # Pulsar closing a cursor may leave cursorsLedgerId -1 and the state in the znode.
    acks = WireRanges(*(np.array([v], np.int64) for v in (7, 11, 7, 14)))
    info = CursorInfoContent(-1, Position(7, 9), acks, {"p": 1}, 5, (), {"k": "v"})
    CursorMetadata(cursor_env.backend.metadata, cursor_env.topic, "sub").create(info)
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions))
    assert cursor.state.mark_delete == Position(7, 9) and cursor.state.properties == {"p": 1}
    assert cursor.state.is_acked(Position(7, 12)) and not cursor.state.is_acked(Position(7, 10))
    assert deletions.enqueued == []  # there was no ledger to hand over
    found = CursorMetadata(cursor_env.backend.metadata, cursor_env.topic, "sub").read()
    assert found is not None and found[0].cursors_ledger_id == cursor.ledger_id
    assert found[0].cursor_properties == {"k": "v"}
