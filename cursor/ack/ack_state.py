"""A cursor's acknowledgment state: mark-delete position, individual acks, batch-index acks.

Everything at or before the mark-delete position is acknowledged. After it, individually
acknowledged entries are per-ledger bitmaps; an ack that makes the entry right after the
mark-delete position acknowledged folds the whole contiguous run into the mark-delete
position, as Pulsar's cursor does, so a range never touches the mark-delete position.

Batch-index acks (PIP-54) keep, per partly acknowledged batch entry, a bit set whose set bits
are the indexes still unacknowledged; when the last one is acknowledged the entry becomes an
individually acknowledged entry. With batch-index acknowledgment off, partial batch acks are
not tracked: the client acks the entry once all of its messages are acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cursor.ack.bitmap import LedgerBitmap
from cursor.ack.bitmap_store import BitmapStore, InMemoryBitmaps
from cursor.ack.dtypes import I64
from cursor.ack.positions import LedgerLayout, Position
from cursor.errors import AckStateError


class AckState:
    def __init__(
        self,
        mark_delete: Position,
        *,
        batch_index_level: bool = False,
        layout: LedgerLayout | None = None,
        bitmaps: BitmapStore | None = None,
        properties: Mapping[str, int] | None = None,
    ) -> None:
        self._mark_delete = mark_delete
        self.batch_index_level = batch_index_level
        self.layout = layout
        self._bitmaps: BitmapStore = bitmaps if bitmaps is not None else InMemoryBitmaps()
        self._range_count = sum(self._bitmaps.runs_of(i) for i in self._bitmaps.ledger_ids())
        self._batches: dict[Position, int] = {}
        # The mark-delete position's properties (PositionInfo.properties).
        self.properties: dict[str, int] = dict(properties or {})
        self._dirty: set[int] = set()

    # -- reading -------------------------------------------------------------------------

    @property
    def mark_delete(self) -> Position:
        return self._mark_delete

    @property
    def range_count(self) -> int:
        """Individually deleted ranges, as Pulsar counts them (runs of acked entries)."""
        return self._range_count

    @property
    def bitmaps(self) -> BitmapStore:
        return self._bitmaps

    def ledger_ids(self) -> list[int]:
        return self._bitmaps.ledger_ids()

    def is_acked(self, position: Position) -> bool:
        if position <= self._mark_delete:
            return True
        bitmap = self._bitmaps.get(position.ledger_id)
        return bitmap is not None and bitmap.contains(position.entry_id)

    def is_batch_index_acked(self, position: Position, index: int) -> bool:
        if self.is_acked(position):
            return True
        unacked = self._batches.get(position)
        return unacked is not None and not (unacked >> index) & 1

    def batch_indexes(self) -> dict[Position, int]:
        """Partly acknowledged batches after the mark-delete position: set bit = unacked."""
        stale = [p for p in self._batches if p <= self._mark_delete]
        for position in stale:
            del self._batches[position]
        return dict(sorted(self._batches.items()))

    # -- acknowledging -------------------------------------------------------------------

    def ack(self, position: Position) -> bool:
        """Acknowledge one entry; False when it already was."""
        _check(position)
        if position <= self._mark_delete:
            return False
        bitmap = self._bitmap_for(position.ledger_id)
        delta = bitmap.add(position.entry_id)
        if delta is None:
            return False
        self._range_count += delta
        self._changed(position.ledger_id)
        self._batches.pop(position, None)
        self._fold()
        return True

    def ack_range(self, ledger_id: int, first: int, last: int) -> None:
        """Acknowledge entries first..last of one ledger."""
        _check(Position(ledger_id, first))
        if ledger_id < self._mark_delete.ledger_id:
            return
        if ledger_id == self._mark_delete.ledger_id:
            first = max(first, self._mark_delete.entry_id + 1)
        if last < first:
            return
        self._range_count += self._bitmap_for(ledger_id).add_range(first, last)
        self._changed(ledger_id)
        self._drop_batches(ledger_id, first, last)
        self._fold()

    def ack_entries(self, ledger_id: int, entries: I64) -> None:
        """Acknowledge many entries of one ledger at once (vectorised)."""
        if entries.size and int(entries.min()) < 0:
            raise AckStateError(f"negative entry id in ledger {ledger_id}")
        if ledger_id < self._mark_delete.ledger_id:
            return
        if ledger_id == self._mark_delete.ledger_id:
            entries = entries[entries > self._mark_delete.entry_id]
        if entries.size == 0:
            return
        bitmap = self._bitmap_for(ledger_id)
        before = bitmap.runs
        bitmap.add_entries(entries)
        self._range_count += bitmap.runs - before
        self._changed(ledger_id)
        self._drop_batches(ledger_id, int(entries.min()), int(entries.max()))
        self._fold()

    def merge_bitmap(self, ledger_id: int, bitmap: LedgerBitmap) -> None:
        """Acknowledge every entry set in `bitmap` (recovery, decoding)."""
        if ledger_id < self._mark_delete.ledger_id or bitmap.is_empty():
            return
        own = self._bitmaps.get(ledger_id)
        before = 0
        if own is None:
            own = bitmap.copy()  # no array to grow and OR into: the common case at recovery
            self._bitmaps.put(ledger_id, own)
        else:
            before = own.runs
            own.merge(bitmap)
        if ledger_id == self._mark_delete.ledger_id:
            own.discard_through(self._mark_delete.entry_id)
        self._range_count += own.runs - before
        self._changed(ledger_id)
        self._fold()

    def ack_batch_index(self, position: Position, batch_size: int, indexes: Iterable[int]) -> bool:
        """Acknowledge messages inside a batch entry; True when that completed the entry."""
        _check(position)
        if not self.batch_index_level or self.is_acked(position):
            return False
        unacked = self._batches.get(position, (1 << batch_size) - 1)
        for index in indexes:
            if not 0 <= index < batch_size:
                raise AckStateError(f"batch index {index} outside a batch of {batch_size}")
            unacked &= ~(1 << index)
        if unacked == 0:
            self._batches.pop(position, None)
            self.ack(position)
            return True
        self._batches[position] = unacked
        return False

    def restore_batch(self, position: Position, unacked: int) -> None:
        """Put back a persisted batch bit set (set bit = unacked)."""
        if unacked and position > self._mark_delete and not self.is_acked(position):
            self._batches[position] = unacked

    def mark_delete_to(
        self, position: Position, properties: Mapping[str, int] | None = None
    ) -> None:
        """Cumulative acknowledgment: everything up to `position` is acknowledged."""
        if properties is not None:
            self.properties = dict(properties)
        if position <= self._mark_delete:
            return
        for ledger_id in self._bitmaps.ledger_ids():
            if ledger_id > position.ledger_id:
                break
            if ledger_id < position.ledger_id:
                self._range_count -= self._bitmaps.runs_of(ledger_id)
                self._bitmaps.discard(ledger_id)
                self._dirty.add(ledger_id)
            else:
                bitmap = self._bitmaps.get(ledger_id)
                if bitmap is not None:
                    self._range_count += bitmap.discard_through(position.entry_id)
                    self._changed(ledger_id)
        self._mark_delete = position
        self.batch_indexes()  # drops the batches it passed
        self._fold()

    # -- persistence bookkeeping ---------------------------------------------------------

    def take_dirty(self) -> set[int]:
        """Ledgers changed since the last call (PIP-81 rewrites only these)."""
        dirty, self._dirty = self._dirty, set()
        return dirty

    def mark_dirty(self, ledger_ids: Iterable[int]) -> None:
        self._dirty.update(ledger_ids)

    # -- internals -----------------------------------------------------------------------

    def _bitmap_for(self, ledger_id: int) -> LedgerBitmap:
        bitmap = self._bitmaps.get(ledger_id)
        if bitmap is None:
            bitmap = LedgerBitmap()
            self._bitmaps.put(ledger_id, bitmap)
        return bitmap

    def _changed(self, ledger_id: int) -> None:
        self._dirty.add(ledger_id)
        bitmap = self._bitmaps.get(ledger_id)
        if bitmap is None:
            return
        if bitmap.is_empty():
            self._bitmaps.discard(ledger_id)
        else:
            self._bitmaps.touched(ledger_id)

    def _drop_batches(self, ledger_id: int, first: int, last: int) -> None:
        if not self._batches:
            return
        for position in [p for p in self._batches if p.ledger_id == ledger_id]:
            if first <= position.entry_id <= last and self.is_acked(position):
                del self._batches[position]

    def _next(self, position: Position) -> Position:
        if self.layout is not None:
            return self.layout.next_position(position)
        return Position(position.ledger_id, position.entry_id + 1)

    def _fold(self) -> None:
        """Move the mark-delete position over acked entries that directly follow it."""
        while True:
            following = self._next(self._mark_delete)
            bitmap = self._bitmaps.get(following.ledger_id)
            if bitmap is None or not bitmap.contains(following.entry_id):
                return
            end = bitmap.run_end(following.entry_id)
            self._range_count += bitmap.discard_through(end)
            crossed = following.ledger_id != self._mark_delete.ledger_id
            self._mark_delete = Position(following.ledger_id, end)
            self._changed(following.ledger_id)
            if not crossed:
                continue
            # Ledgers wholly passed by a layout-aware fold hold nothing any more.
            for ledger_id in self._bitmaps.ledger_ids():
                if ledger_id >= self._mark_delete.ledger_id:
                    break
                self._range_count -= self._bitmaps.runs_of(ledger_id)
                self._bitmaps.discard(ledger_id)
                self._dirty.add(ledger_id)


def _check(position: Position) -> None:
    if position.ledger_id < 0 or position.entry_id < 0:
        raise AckStateError(f"invalid position {position}")
