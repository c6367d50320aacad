"""Cursor-ledger rotation, with the old ledger handed to the two-phase deletion.

1. create the new cursor ledger (with the custom metadata Pulsar puts on cursor ledgers);
2. write the whole state into it;
3. phase one for the old ledger (component MANAGED_CURSOR), and only once the broker has
   acknowledged it,
4. compare-and-set the cursor's ManagedCursorInfo to name the new ledger.
If step 4 fails the old ledger stays the cursor's ledger and the new one, which nothing
references, is enqueued instead. The pending deletion of the old ledger then finds it still
referenced and is reconsumed and finally archived, never executed: a crash or failure at any
step leaves the referenced ledger alone and at worst an unreferenced ledger to clean up.
A write whose outcome is unknown (a lost connection) is settled by reading the znode back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from core.errors import (
    EnqueueError,
    LedgerStorageError,
    MetadataError,
    TransientMetadataError,
)
from cursor.durable.metadata import CursorMetadata
from cursor.errors import RotationError
from cursor.persistence import CursorLedgers, WrittenState
from cursor.wire import CursorInfoContent
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import PendingDeletions
from deletion.domain.topics import TopicName

T = TypeVar("T")
log = logging.getLogger(__name__)


class RotationOutcome(Enum):
    SWITCHED = "switched"  # the metadata names the new ledger; the old one is enqueued
    KEPT_OLD = "kept_old"  # the metadata update failed; the new ledger is enqueued
    NOT_ENQUEUED = "not_enqueued"  # phase one failed; the metadata was left alone


@dataclass(frozen=True)
class Rotation:
    outcome: RotationOutcome
    old_ledger: int | None
    new_ledger: int
    written: WrittenState
    version: int | None  # the znode's version after a switch
    reason: str = ""


class LedgerRotator:
    def __init__(
        self,
        ledgers: CursorLedgers,
        metadata: CursorMetadata,
        deletions: PendingDeletions,
        topic: TopicName,
        cursor: str,
    ) -> None:
        self._ledgers = ledgers
        self._metadata = metadata
        self._deletions = deletions
        self._topic = topic
        self._cursor = cursor

    def new_ledger(self) -> int:
        metadata = pulsar_custom_metadata(self._topic, LedgerComponent.MANAGED_CURSOR, self._cursor)
        return self._ledgers.create_ledger(metadata)

    def rotate(
        self,
        old_ledger: int | None,
        version: int | None,
        write_state: Callable[[int], WrittenState],
        cursor_info: Callable[[int], CursorInfoContent],
    ) -> Rotation:
        """Switch the cursor from `old_ledger` (None: it has none yet) to a new ledger.

        `version` is the znode version to compare against; None creates the znode.
        """
        new_ledger = self.new_ledger()
        written = write_state(new_ledger)
        info = cursor_info(new_ledger)
        olds = [] if old_ledger is None else [self._pending(old_ledger)]

        def commit() -> int:
            if version is None:
                return self._metadata.create(info)
            return self._metadata.compare_and_set(info, version)

        new_version: int | None
        try:
            new_version = self._deletions.enqueue_then_commit(olds, commit)
        except EnqueueError as exc:
            self._abandon(new_ledger)
            return Rotation(
                RotationOutcome.NOT_ENQUEUED, old_ledger, new_ledger, written, None, str(exc)
            )
        except MetadataError as exc:
            if isinstance(exc, TransientMetadataError) and self._settled(new_ledger):
                found = self._metadata.read()
                new_version = found[1] if found else None
            else:
                self._abandon(new_ledger)
                return Rotation(
                    RotationOutcome.KEPT_OLD, old_ledger, new_ledger, written, None, str(exc)
                )
        if old_ledger is not None:
            try:
                self._ledgers.close_ledger(old_ledger)
            except LedgerStorageError as exc:  # it is unreferenced and enqueued either way
                log.warning("could not close old cursor ledger %s: %s", old_ledger, exc)
        log.info("cursor %s of %s now on ledger %s", self._cursor, self._topic, new_ledger)
        return Rotation(RotationOutcome.SWITCHED, old_ledger, new_ledger, written, new_version)

    def _settled(self, new_ledger: int) -> bool:
        """Whether a write that may or may not have happened did; unknown is an error."""
        try:
            return self._metadata.points_at(new_ledger)
        except MetadataError as exc:
            raise RotationError(
                f"cursor {self._cursor} of {self._topic}: whether it now uses ledger "
                f"{new_ledger} is unknown ({exc}); reopen the cursor to find out"
            ) from exc

    def _pending(self, ledger_id: int) -> PendingDeleteLedgerInfo:
        return PendingDeleteLedgerInfo(
            self._topic, LedgerComponent.MANAGED_CURSOR, LedgerType.LEDGER, ledger_id
        )

    def _abandon(self, ledger_id: int) -> None:
        """Hand an unreferenced new ledger to phase two; if even that fails, the orphan
        audit finds it (it carries the cursor's custom metadata)."""
        try:
            self._deletions.enqueue([self._pending(ledger_id)])
        except EnqueueError as exc:
            log.warning("cursor ledger %s left for the orphan audit: %s", ledger_id, exc)
