"""Cursor-ledger rotation: when it rotates, what it enqueues, and how a failed switch ends."""

from __future__ import annotations

import pytest

from core.clock import EpochSeconds
from cursor import (
    CursorMetadata,
    CursorSettings,
    CursorStores,
    DurableCursor,
    RotationError,
    RotationOutcome,
)
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter, MetadataInUseLedgers
from deletion.domain.decision import Verdict, decide_in_use
from deletion.wire.proto.ml_data_formats_pb2 import (
    CompressionType,
)
from harness.crashing import (
    RecordingDeletions,
)
from harness.cursor_fixtures import CursorEnv
from tests.integration.cursor.rotation_rig import (
    AmbiguousWrites,
    FakeClock,
    RefusingPhaseOne,
    ack_some,
    assert_nothing_referenced_is_deletable,
    deletions,
    referenced_ledger,
)

__all__ = ["deletions"]  # the fixtures


def test_rotation_after_max_entries_enqueues_the_old_ledger_then_switches(
    cursor_env: CursorEnv, deletions: RecordingDeletions
) -> None:
    # Compressed znodes too: phase two reads them with Pulsar's codecs.
    settings = CursorSettings(max_entries_per_ledger=3, compression=CompressionType.ZSTD)
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions), settings)
    first = cursor.ledger_id
    assert first is not None and deletions.enqueued == []
    for seed in range(3):
        ack_some(cursor, seed)
        cursor.persist()
    assert cursor.ledger_id != first and cursor.last_rotation is not None
    assert cursor.last_rotation.outcome is RotationOutcome.SWITCHED
    assert deletions.ledger_ids == [first]
    assert referenced_ledger(cursor_env, "sub") == cursor.ledger_id
    assert_nothing_referenced_is_deletable(cursor_env, [deletions])


def test_rotation_after_the_rollover_time(
    cursor_env: CursorEnv, deletions: RecordingDeletions
) -> None:
    clock = FakeClock()
    settings = CursorSettings(rollover_seconds=60)
    stores = cursor_env.stores(deletions)
    cursor = DurableCursor.open(cursor_env.topic, "sub", stores, settings, clock)
    first = cursor.ledger_id
    cursor.persist()
    clock.now += 60
    cursor.persist()
    assert cursor.ledger_id == first
    clock.now += 1
    cursor.persist()
    assert cursor.ledger_id != first and deletions.ledger_ids == [first]


def test_a_failed_metadata_update_enqueues_the_new_ledger_and_keeps_the_old(
    cursor_env: CursorEnv, deletions: RecordingDeletions
) -> None:
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions))
    ack_some(cursor, 1)
    cursor.persist()
    old = cursor.ledger_id
    # Another writer (a new owner of the topic) updates the znode behind our back.
    metadata = CursorMetadata(cursor_env.backend.metadata, cursor_env.topic, "sub")
    found = metadata.read()
    assert found is not None and old is not None
    metadata.compare_and_set(found[0], found[1])
    rotation = cursor.rotate()
    assert rotation.outcome is RotationOutcome.KEPT_OLD
    assert cursor.ledger_id == old and referenced_ledger(cursor_env, "sub") == old
    assert deletions.ledger_ids == [old, rotation.new_ledger]
    snapshot = MetadataInUseLedgers(cursor_env.backend.metadata).fetch(cursor_env.topic)
    old_info, new_info = deletions.enqueued
    assert decide_in_use(old_info, snapshot, EpochSeconds(0.0)).referenced
    assert new_info.ledger_id not in snapshot.ledger_ids
    # Once the topic has rolled a newer data ledger, phase two may delete the abandoned one.
    newer = cursor_env.ledgers.create_ledger({})
    ManagedLedgerWriter(cursor_env.backend.metadata).write(cursor_env.topic, [newer], version=0)
    snapshot = MetadataInUseLedgers(cursor_env.backend.metadata).fetch(cursor_env.topic)
    assert decide_in_use(old_info, snapshot, EpochSeconds(0.0)).verdict is Verdict.NOT_YET
    assert decide_in_use(new_info, snapshot, EpochSeconds(0.0)).verdict is Verdict.SAFE_TO_DELETE
    # The znode still names our ledger: the cursor takes its version and the next one works.
    assert not cursor.fenced and cursor.rotate().outcome is RotationOutcome.SWITCHED


def test_a_cursor_switched_by_another_owner_stops_writing(
    cursor_env: CursorEnv, deletions: RecordingDeletions
) -> None:
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions))
    # A new owner recovers the cursor (and moves it to a ledger of its own).
    DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(deletions))
    assert cursor.rotate().outcome is RotationOutcome.KEPT_OLD and cursor.fenced
    with pytest.raises(RotationError):
        cursor.persist()


@pytest.mark.parametrize("applied", [True, False], ids=["write-applied", "write-lost"])
def test_a_switch_whose_write_outcome_is_unknown_is_settled_by_reading_back(
    cursor_env: CursorEnv, deletions: RecordingDeletions, applied: bool
) -> None:
    metadata = AmbiguousWrites(cursor_env.backend.metadata, applied)
    stores = CursorStores(metadata, cursor_env.ledgers, deletions)
    cursor = DurableCursor.open(cursor_env.topic, "sub", stores)
    old = cursor.ledger_id
    metadata.armed = True
    rotation = cursor.rotate()
    if applied:
        assert rotation.outcome is RotationOutcome.SWITCHED and deletions.ledger_ids == [old]
        assert cursor.ledger_id == rotation.new_ledger == referenced_ledger(cursor_env, "sub")
    else:
        assert rotation.outcome is RotationOutcome.KEPT_OLD and not cursor.fenced
        assert deletions.ledger_ids == [old, rotation.new_ledger]
        assert cursor.ledger_id == old == referenced_ledger(cursor_env, "sub")
    assert_nothing_referenced_is_deletable(cursor_env, [deletions])


def test_when_phase_one_fails_the_metadata_is_left_alone(cursor_env: CursorEnv) -> None:
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(RefusingPhaseOne()))
    old = cursor.ledger_id
    rotation = cursor.rotate()
    assert rotation.outcome is RotationOutcome.NOT_ENQUEUED
    assert cursor.ledger_id == old == referenced_ledger(cursor_env, "sub")
    cursor.persist()  # and the cursor carries on in its ledger
