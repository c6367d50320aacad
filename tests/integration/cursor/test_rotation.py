"""Rotation hands old cursor ledgers to the two-phase deletion; a failed metadata update
enqueues the new ledger instead; a crash at any point loses no persisted ack and leaves no
referenced ledger deletable. Real broker, real ZooKeeper or SQLite, real ledger store."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import pytest
import zstandard

from core.clock import EpochSeconds
from core.errors import EnqueueError, TransientMetadataError
from cursor import (
    CursorInfoContent,
    CursorMetadata,
    CursorSettings,
    CursorStores,
    DurableCursor,
    Position,
    RangeEncoding,
    RotationError,
    RotationOutcome,
    WireRanges,
)
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter, MetadataInUseLedgers
from deletion.domain.decision import Verdict, decide_in_use
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome
from deletion.domain.ports import ANY_VERSION, MetadataStore, Stat
from deletion.wire.proto.ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedLedgerInfo,
)
from harness.crashing import (
    CrashingLedgers,
    CrashingMetadata,
    RecordingDeletions,
    SimulatedCrash,
    Trap,
)
from harness.cursor_fixtures import CursorEnv
from harness.janitor import JanitorFactory, Recorder
from tests.unit.cursor.test_codec_round_trip import same_acks

T = TypeVar("T")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> EpochSeconds:
        return EpochSeconds(self.now)


def ack_some(cursor: DurableCursor, seed: int) -> None:
    """About 300 holes over data ledgers 7 to 10."""
    rng = np.random.default_rng(seed)
    for entry in np.unique(rng.integers(0, 20_000, 300)).tolist():
        cursor.ack([Position(7 + entry // 5000, entry % 5000)])


def referenced_ledger(env: CursorEnv, name: str) -> int:
    found = CursorMetadata(env.backend.metadata, env.topic, name).read()
    assert found is not None
    return found[0].cursors_ledger_id


def _plain(data: bytes) -> bytes:
    """Undo Pulsar's 0x4778 header, ZSTD being the only codec these tests store with."""
    if not data.startswith(b"\x47\x78"):
        return data
    (header_size,) = struct.unpack_from(">i", data, 2)
    return zstandard.ZstdDecompressor().decompress(data[6 + header_size :])


def referenced_by_raw_metadata(env: CursorEnv) -> set[int]:
    """The ledgers the topic's znodes name, parsed here with the protobuf classes alone: the
    test's own ground truth, not the product's in-use reader."""
    store, path = env.backend.metadata, f"/managed-ledgers/{env.topic.managed_ledger_name}"
    node = store.get(path)
    found: set[int] = set()
    if node is not None:
        found.update(
            li.ledgerId for li in ManagedLedgerInfo.FromString(_plain(node.data)).ledgerInfo
        )
        for child in store.children(path):
            cursor_node = store.get(f"{path}/{child}")
            if cursor_node is not None:
                found.add(ManagedCursorInfo.FromString(_plain(cursor_node.data)).cursorsLedgerId)
    return found


def assert_nothing_referenced_is_deletable(
    env: CursorEnv, recorders: list[RecordingDeletions]
) -> None:
    """Every pending deletion sent so far whose ledger the metadata still names: the ledger
    exists, and phase two's rule refuses it on a snapshot of the metadata now."""
    referenced = referenced_by_raw_metadata(env)
    snapshot = MetadataInUseLedgers(env.backend.metadata).fetch(env.topic)
    for recorder in recorders:
        for info in recorder.enqueued:
            assert info.ledger_component is LedgerComponent.MANAGED_CURSOR
            assert info.ledger_type is LedgerType.LEDGER and info.topic_name == env.topic
            if info.ledger_id in referenced:
                assert env.ledgers.ledger(info.ledger_id) is not None
                decision = decide_in_use(info, snapshot, EpochSeconds(0.0))
                assert decision.verdict is Verdict.NOT_YET


@pytest.fixture
def deletions(janitor: JanitorFactory, cursor_env: CursorEnv) -> RecordingDeletions:
    return RecordingDeletions(janitor.sidecar(**cursor_env.sidecar_settings()).phase_one)


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


class AmbiguousWrites:
    """A metadata store whose next write fails with a connection loss, before or after it
    took effect: the writer cannot tell which."""

    def __init__(self, real: MetadataStore, applied: bool) -> None:
        self._real, self._applied, self.armed = real, applied, False

    def set(self, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        if self.armed:
            self.armed = False
            if self._applied:
                self._real.set(path, data, expected_version)
            raise TransientMetadataError("ConnectionLoss")
        return self._real.set(path, data, expected_version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


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


class RefusingPhaseOne:
    """Phase one against a broker that refuses every send."""

    def enqueue(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Any]:
        raise EnqueueError("broker unavailable")

    def enqueue_then_commit(
        self, infos: Sequence[PendingDeleteLedgerInfo], commit: Callable[[], T]
    ) -> T:
        if infos:
            raise EnqueueError("broker unavailable")
        return commit()


def test_when_phase_one_fails_the_metadata_is_left_alone(cursor_env: CursorEnv) -> None:
    cursor = DurableCursor.open(cursor_env.topic, "sub", cursor_env.stores(RefusingPhaseOne()))
    old = cursor.ledger_id
    rotation = cursor.rotate()
    assert rotation.outcome is RotationOutcome.NOT_ENQUEUED
    assert cursor.ledger_id == old == referenced_ledger(cursor_env, "sub")
    cursor.persist()  # and the cursor carries on in its ledger


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
