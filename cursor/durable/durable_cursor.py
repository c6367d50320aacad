"""A cursor whose ack state is kept in its own ledger, rotated, and gated (PIP-299).

Opening recovers the state from the ledger the cursor's znode names (falling back to what the
znode itself holds when the ledger has no readable state, as Pulsar does) and moves to a
fresh ledger at once: a recovered ledger is never appended to again, so a torn tail can only
ever be the last thing in a ledger. After each flush the ledger rolls over once it holds more
than `managedLedgerCursorMaxEntriesPerLedger` entries or is older than
`managedLedgerCursorRolloverTimeInSeconds`. Calls are serialised by a lock. The clock is the
wall clock: the znode's `lastActive` is epoch milliseconds, as Pulsar writes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.clock import WallClock, wall_clock
from core.errors import DecodeError, LedgerStorageError
from cursor.ack import BEFORE_FIRST, AckState, LedgerLayout, Position
from cursor.durable.gate import AckStateGate
from cursor.durable.metadata import CursorMetadata
from cursor.durable.rotation import LedgerRotator, Rotation, RotationOutcome
from cursor.errors import RotationError
from cursor.persistence import (
    CursorLedgers,
    CursorSettings,
    FullStatePersistence,
    IncrementalPersistence,
    PersistReport,
    StatePersistence,
    apply_ranges,
)
from cursor.wire import CursorInfoContent
from deletion.domain.ports import MetadataStore, PendingDeletions
from deletion.domain.topics import TopicName

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CursorStores:
    """Where a cursor lives: its znode's store, its ledgers, and phase one."""

    metadata: MetadataStore
    ledgers: CursorLedgers
    deletions: PendingDeletions


class DurableCursor:
    def __init__(
        self,
        metadata: CursorMetadata,
        persistence: StatePersistence,
        rotator: LedgerRotator,
        state: AckState,
        settings: CursorSettings,
        clock: WallClock,
        cursor_properties: Mapping[str, str],
    ) -> None:
        self._metadata = metadata
        self._persistence = persistence
        self._rotator = rotator
        self._state = state
        self._settings = settings
        self._clock = clock
        self._cursor_properties = dict(cursor_properties)
        self._lock = threading.RLock()
        self.gate = AckStateGate(
            state, settings.max_unacked_ranges_to_persist, settings.pause_on_ack_state_persistent
        )
        self.ledger_id: int | None = None
        self.version: int | None = None
        self.entries_in_ledger = 0
        self.switched_at = clock()
        self.last_report: PersistReport | None = None
        self.last_rotation: Rotation | None = None
        self.fenced = False  # another owner switched the cursor: stop writing

    @classmethod
    def open(
        cls,
        topic: TopicName,
        name: str,
        stores: CursorStores,
        settings: CursorSettings | None = None,
        clock: WallClock = wall_clock,
        layout: LedgerLayout | None = None,
        initial_mark_delete: Position = BEFORE_FIRST,
    ) -> DurableCursor:
        """Recover (or create) the cursor and switch it to a fresh ledger."""
        settings = settings or CursorSettings()
        metadata = CursorMetadata(stores.metadata, topic, name, settings.compression)
        persistence: StatePersistence
        if settings.multiple_entries:
            persistence = IncrementalPersistence(stores.ledgers, settings)
        else:
            persistence = FullStatePersistence(stores.ledgers, settings)
        rotator = LedgerRotator(stores.ledgers, metadata, stores.deletions, topic, name)
        found = metadata.read()
        version = old_ledger = None
        properties: Mapping[str, str] = {}
        if found is None:
            state = AckState(
                initial_mark_delete, batch_index_level=settings.batch_index_level, layout=layout
            )
        else:
            info, version = found
            properties = info.cursor_properties
            state, old_ledger = _recovered(info, persistence, settings, layout)
        cursor = cls(metadata, persistence, rotator, state, settings, clock, properties)
        if isinstance(persistence, IncrementalPersistence):
            persistence.attach(state)
        cursor.version = version
        rotation = cursor._switch(old_ledger)
        if rotation.outcome is not RotationOutcome.SWITCHED:
            raise RotationError(f"cannot open cursor {name} of {topic}: {rotation.reason}")
        return cursor

    # -- acknowledging -------------------------------------------------------------------

    @property
    def state(self) -> AckState:
        return self._state

    def ack(self, positions: Iterable[Position]) -> None:
        with self._lock:
            for position in positions:
                self._state.ack(position)
            self.gate.after_acks()

    def ack_batch_index(self, position: Position, batch_size: int, indexes: Iterable[int]) -> None:
        with self._lock:
            self._state.ack_batch_index(position, batch_size, indexes)
            self.gate.after_acks()

    def mark_delete(self, position: Position, properties: Mapping[str, int] | None = None) -> None:
        with self._lock:
            self._state.mark_delete_to(position, properties)
            self.gate.after_acks()

    def may_dispatch(self) -> bool:
        with self._lock:
            return self.gate.may_dispatch()

    # -- persisting ----------------------------------------------------------------------

    def persist(self) -> PersistReport:
        """Flush the state to the cursor ledger, then roll the ledger over if it is due."""
        with self._lock:
            if self.fenced:
                raise RotationError(f"cursor on ledger {self.ledger_id} was taken over")
            try:
                written = self._persistence.flush(self._state)
            except LedgerStorageError as exc:
                # As Pulsar does after a failed add: carry on in a new ledger.
                log.warning("cursor ledger %s failed (%s): switching", self.ledger_id, exc)
                rotation = self.rotate()
                if rotation.outcome is not RotationOutcome.SWITCHED:
                    raise
                return rotation.written.report
            self.entries_in_ledger += written.entries
            self.last_report = written.report
            if self.rotation_due():
                self.rotate()
            return written.report

    def rotation_due(self) -> bool:
        """Pulsar's shouldCloseLedger: last entry id past the limit, or the ledger too old."""
        too_many = self.entries_in_ledger - 1 >= self._settings.max_entries_per_ledger
        return too_many or self._clock() - self.switched_at > self._settings.rollover_seconds

    def rotate(self) -> Rotation:
        with self._lock:
            if self.fenced:
                raise RotationError(f"cursor on ledger {self.ledger_id} was taken over")
            return self._switch(self.ledger_id)

    # -- internals -----------------------------------------------------------------------

    def _switch(self, old_ledger: int | None) -> Rotation:
        rotation = self._rotator.rotate(
            old_ledger,
            self.version,
            lambda ledger_id: self._persistence.write_into(self._state, ledger_id),
            self._cursor_info,
        )
        self.last_rotation = rotation
        if rotation.outcome is RotationOutcome.SWITCHED:
            self._persistence.adopt(rotation.written)
            self.ledger_id, self.version = rotation.new_ledger, rotation.version
            self.entries_in_ledger = rotation.written.entries
            self.last_report = rotation.written.report
        elif rotation.outcome is RotationOutcome.KEPT_OLD:
            self._after_failed_switch()
        self.switched_at = self._clock()
        return rotation

    def _after_failed_switch(self) -> None:
        """Someone else wrote the znode. If it still names our ledger (an admin changed the
        cursor's properties, say), take its version and properties and carry on; if it names
        another ledger, the cursor has a new owner and this one must stop writing."""
        found = self._metadata.read()
        if found is None or found[0].cursors_ledger_id != self.ledger_id:
            self.fenced = True
            return
        info, self.version = found
        self._cursor_properties = dict(info.cursor_properties)

    def _cursor_info(self, ledger_id: int) -> CursorInfoContent:
        return CursorInfoContent(
            cursors_ledger_id=ledger_id,
            mark_delete=self._state.mark_delete,
            properties=dict(self._state.properties),
            last_active=int(self._clock() * 1000),
            cursor_properties=self._cursor_properties,
        )


def _recovered(
    info: CursorInfoContent,
    persistence: StatePersistence,
    settings: CursorSettings,
    layout: LedgerLayout | None,
) -> tuple[AckState, int | None]:
    """The state from the cursor ledger, or from the znode when that has none to give."""
    ledger_id = info.cursors_ledger_id
    if ledger_id >= 0:
        try:
            return persistence.recover(ledger_id, layout).state, ledger_id
        except DecodeError as exc:
            log.warning("cursor ledger %s unreadable (%s): using the znode's state", ledger_id, exc)
    mark_delete = info.mark_delete or BEFORE_FIRST
    state = AckState(
        mark_delete,
        batch_index_level=settings.batch_index_level,
        layout=layout,
        properties=info.properties,
    )
    apply_ranges(state, info.ranges)
    for batch in info.batch_indexes:
        state.restore_batch(batch.position, batch.mask)
    return state, ledger_id if ledger_id >= 0 else None
