"""PIP-381 layout: each flush appends the whole state, chunked when it is large."""

from __future__ import annotations

from dataclasses import replace

from core.errors import LedgerStorageError
from cursor.ack import AckState, LedgerLayout
from cursor.persistence import chunking, streamed
from cursor.persistence.capture import capture
from cursor.persistence.ledger_port import CursorLedgers, RecoveredState, WrittenState
from cursor.persistence.recovery import recover
from cursor.persistence.settings import CursorSettings
from cursor.wire import encode_state


class FullStatePersistence:
    def __init__(self, ledgers: CursorLedgers, settings: CursorSettings) -> None:
        self._ledgers = ledgers
        self._settings = settings
        self.ledger_id: int | None = None

    def flush(self, state: AckState) -> WrittenState:
        if self.ledger_id is None:
            raise LedgerStorageError("the cursor has no current ledger")
        return self.write_into(state, self.ledger_id)

    def write_into(self, state: AckState, ledger_id: int) -> WrittenState:
        settings = self._settings
        if streamed.streams(state, settings):
            report, written = streamed.write_streamed(self._ledgers, ledger_id, state, settings)
            state.take_dirty()
            return WrittenState(ledger_id, report, written.entries)
        content, report = capture(
            state,
            settings.range_encoding,
            settings.max_unacked_ranges_to_persist,
            settings.max_batches_to_persist,
        )
        payload = encode_state(content, settings.compression, settings.max_entry_size)
        written = chunking.write(self._ledgers, ledger_id, payload, settings.max_entry_size)
        state.take_dirty()
        report = replace(report, payload_bytes=len(payload), entries_written=written.entries)
        return WrittenState(ledger_id, report, written.entries)

    def adopt(self, written: WrittenState) -> None:
        self.ledger_id = written.ledger_id

    def recover(self, ledger_id: int, layout: LedgerLayout | None) -> RecoveredState:
        recovered = recover(self._ledgers, ledger_id, self._settings, layout)
        self.ledger_id = ledger_id
        return recovered
