"""PIP-299: pause dispatch while the ack state is too large to persist in full.

With `dispatcherPauseOnAckStatePersistentEnabled`, a dispatcher asks the gate before reading
more entries; while the cursor's range count exceeds `managedLedgerMaxUnackedRangesToPersist`
(Pulsar's `isCursorDataFullyPersistable`), the gate is closed and reports
`blocked_on_ack_state_persistent`. Acks that bring the count back reopen it and call the
resume callbacks, as Pulsar's dispatcher resumes reading after acks. Disabled, it never
closes.
"""

from __future__ import annotations

from collections.abc import Callable

from cursor.ack import AckState


class AckStateGate:
    def __init__(self, state: AckState, max_ranges: int, enabled: bool) -> None:
        self._state = state
        self._max_ranges = max_ranges
        self._enabled = enabled
        self._blocked = False
        self._on_resume: list[Callable[[], None]] = []

    @property
    def blocked_on_ack_state_persistent(self) -> bool:
        """SubscriptionStats.isBlockedOnAckStatePersistent: always False when disabled."""
        return self._blocked

    def on_resume(self, callback: Callable[[], None]) -> None:
        self._on_resume.append(callback)

    def may_dispatch(self) -> bool:
        """Checked before each read for dispatch; closes the gate on overflow."""
        if self._enabled and not self._fully_persistable():
            self._blocked = True
        return not self._blocked

    def after_acks(self) -> None:
        """Checked after acks: reopens the gate once the state fits again."""
        if self._blocked and self._fully_persistable():
            self._blocked = False
            for callback in list(self._on_resume):
                callback()

    def _fully_persistable(self) -> bool:
        return self._state.range_count <= self._max_ranges
