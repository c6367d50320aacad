"""PIP-81 layout: one entry per data ledger, rewritten only when dirty, closed by a marker.

A flush writes an entry for each data ledger whose acks changed since the last flush, then a
marker indexing the newest entry of every data ledger (ack_index.py). Unchanged ledgers keep
pointing at older entries of the same cursor ledger, so the write cost follows the change,
not the size of the state. The cap applies to whole ledgers in ledger order, as for a
LongListMap: every ledger still gets its entry, so the LRU can always swap it back in, but
the marker indexes only the ledgers within the cap, and that is all recovery sees. A
rotation copies every ledger's entry into the new ledger, re-encoding those in memory and
copying the bytes of those swapped out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.errors import LedgerStorageError
from cursor.ack import AckState, LedgerBitmap, LedgerLayout, Position, SwappingBitmaps
from cursor.persistence import chunking
from cursor.persistence.capture import PersistReport, capped_batches
from cursor.persistence.ledger_port import CursorLedgers, RecoveredState, WrittenState
from cursor.persistence.recovery import load_ledger, recover
from cursor.persistence.settings import CursorSettings
from cursor.wire import IndexEntry, PositionInfoContent, ack_index, encode_state


@dataclass
class _Batch:
    """Entries appended by one flush or rotation."""

    index: dict[int, IndexEntry]  # the newest entry of every ledger in memory
    entries: int = 0
    payload_bytes: int = 0
    last_entry: int = -1
    encoded: list[int] = field(default_factory=list)  # written from memory
    marked: dict[int, IndexEntry] = field(default_factory=dict)  # in the marker: within the cap


class IncrementalPersistence:
    def __init__(self, ledgers: CursorLedgers, settings: CursorSettings) -> None:
        self._ledgers = ledgers
        self._settings = settings
        self.ledger_id: int | None = None
        self._index: dict[int, IndexEntry] = {}
        # Entries written when an LRU eviction saved a dirty ledger: not yet under a marker.
        self._pending: dict[int, IndexEntry] = {}
        self._state: AckState | None = None
        self._mark_delete = Position(-1, -1)  # before anything: only until a state is known

    @property
    def index(self) -> dict[int, IndexEntry]:
        return dict(self._index)

    # -- StatePersistence ----------------------------------------------------------------

    def flush(self, state: AckState) -> WrittenState:
        ledger_id = self._current()
        batch = _Batch({**self._index, **self._pending})
        dirty = state.take_dirty()
        try:
            report = self._write(state, ledger_id, batch, dirty)
        except BaseException:
            state.mark_dirty(dirty)  # still to be written, wherever the next flush goes
            raise
        written = _written(ledger_id, report, batch)
        self.adopt(written)
        if isinstance(state.bitmaps, SwappingBitmaps):
            # In an entry of the current ledger now: an eviction need not write them again.
            for data_ledger in batch.encoded:
                state.bitmaps.saved(data_ledger)
        return written

    def write_into(self, state: AckState, ledger_id: int) -> WrittenState:
        batch = _Batch({})
        report = self._write(state, ledger_id, batch, None)
        return _written(ledger_id, report, batch)

    def adopt(self, written: WrittenState) -> None:
        self.ledger_id = written.ledger_id
        self._index, self._pending = dict(written.index), dict(written.unmarked)

    def recover(self, ledger_id: int, layout: LedgerLayout | None) -> RecoveredState:
        self.ledger_id, self._index, self._pending = ledger_id, {}, {}

        def found(mark_delete: Position, index: dict[int, IndexEntry]) -> None:
            self._index, self._mark_delete = index, mark_delete

        recovered = recover(self._ledgers, ledger_id, self._settings, layout, self, found)
        self._index = dict(recovered.index)
        self._state = recovered.state
        return recovered

    def attach(self, state: AckState) -> None:
        """The state whose mark-delete position evicted entries are written with."""
        self._state = state

    # -- LedgerSwap (the LRU cache's backing store) --------------------------------------

    def load(self, ledger_id: int) -> LedgerBitmap:
        entry = self._pending.get(ledger_id) or self._index.get(ledger_id)
        if entry is None:
            raise LedgerStorageError(f"no entry holds the acks of ledger {ledger_id}")
        return load_ledger(self._ledgers, self._current(), ledger_id, entry)

    def save(self, ledger_id: int, bitmap: LedgerBitmap) -> None:
        # An unchanged reader may land on this entry after a torn flush and take it for a
        # whole state: it must carry a true mark-delete position (an older one is still true).
        mark_delete = self._state.mark_delete if self._state is not None else self._mark_delete
        batch = _Batch({})
        entry = ack_index.ledger_entry(
            mark_delete, ledger_id, bitmap, self._settings.range_encoding
        )
        self._append(batch, self._current(), entry)
        self._pending[ledger_id] = IndexEntry(batch.last_entry, bitmap.runs)

    # -- internals -----------------------------------------------------------------------

    def _write(
        self, state: AckState, ledger_id: int, batch: _Batch, dirty: set[int] | None
    ) -> PersistReport:
        """Write the ledgers that need it (all when `dirty` is None), then the marker.

        Every ledger in memory gets an entry, so an LRU can always swap it back in; the
        marker indexes only the ledgers within the cap, which is what recovery will see.
        """
        settings = self._settings
        present = state.ledger_ids()
        for data_ledger in present:
            if dirty is None or data_ledger in dirty or data_ledger not in batch.index:
                self._write_ledger(state, ledger_id, data_ledger, batch, copy=dirty is None)
        batch.index = {i: batch.index[i] for i in present if i in batch.index}
        marked: dict[int, IndexEntry] = {}
        running = 0
        for data_ledger, entry in batch.index.items():
            running += state.bitmaps.runs_of(data_ledger)
            if running > settings.max_unacked_ranges_to_persist:
                break
            marked[data_ledger] = entry
        batch.marked = marked
        batches, batches_total = capped_batches(state, settings.max_batches_to_persist)
        marker = ack_index.marker(state.mark_delete, state.properties, batches, marked)
        self._append(batch, ledger_id, marker)
        return PersistReport(
            encoding=settings.range_encoding,
            ranges_total=state.range_count,
            ranges_persisted=sum(state.bitmaps.runs_of(i) for i in marked),
            batches_total=batches_total,
            batches_persisted=len(batches),
            payload_bytes=batch.payload_bytes,
            entries_written=batch.entries,
        )

    def _write_ledger(
        self, state: AckState, ledger_id: int, data_ledger: int, batch: _Batch, copy: bool
    ) -> None:
        store = state.bitmaps
        runs = store.runs_of(data_ledger)
        if copy and not store.loaded(data_ledger):
            # Swapped out: its entry in the current ledger is still its latest word.
            source = self._pending.get(data_ledger) or self._index[data_ledger]
            payload = chunking.read_at(self._ledgers, self._current(), source.entry_id)
            self._append_payload(batch, ledger_id, payload)
        else:
            bitmap = store.get(data_ledger)
            if bitmap is None:
                return
            content = ack_index.ledger_entry(
                state.mark_delete, data_ledger, bitmap, self._settings.range_encoding
            )
            self._append(batch, ledger_id, content)
            batch.encoded.append(data_ledger)
        batch.index[data_ledger] = IndexEntry(batch.last_entry, runs)

    def _append(self, batch: _Batch, ledger_id: int, content: PositionInfoContent) -> None:
        settings = self._settings
        payload = encode_state(content, settings.compression, settings.max_entry_size)
        self._append_payload(batch, ledger_id, payload)

    def _append_payload(self, batch: _Batch, ledger_id: int, payload: bytes) -> None:
        written = chunking.write(self._ledgers, ledger_id, payload, self._settings.max_entry_size)
        batch.entries += written.entries
        batch.payload_bytes += len(payload)
        batch.last_entry = written.entry_id

    def _current(self) -> int:
        if self.ledger_id is None:
            raise LedgerStorageError("the cursor has no current ledger")
        return self.ledger_id


def _written(ledger_id: int, report: PersistReport, batch: _Batch) -> WrittenState:
    unmarked = {i: e for i, e in batch.index.items() if i not in batch.marked}
    return WrittenState(ledger_id, report, batch.entries, batch.marked, unmarked)
