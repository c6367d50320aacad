"""Shared helpers of the rotation tests."""

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
    CursorMetadata,
    DurableCursor,
    Position,
)
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.domain.decision import Verdict, decide_in_use
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import ANY_VERSION, MetadataStore, Stat
from deletion.wire.proto.ml_data_formats_pb2 import (
    ManagedCursorInfo,
    ManagedLedgerInfo,
)
from harness.crashing import (
    RecordingDeletions,
)
from harness.cursor_fixtures import CursorEnv
from harness.janitor import JanitorFactory

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
