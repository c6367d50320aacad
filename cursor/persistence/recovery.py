"""Recovering an ack state from a cursor ledger, whichever layout wrote it.

The newest complete state is found by walking back from the last entry (chunking.py). A
PIP-81 ledger entry is never a complete state on its own: only a marker closes a flush, so
entries written after the last marker (a flush cut short) are passed over, as the PIP
says. A state without a marker is recovered the old way, so ledgers written before either
feature was enabled read as they always did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from core.errors import DecodeError
from cursor.ack import (
    AckState,
    BitmapStore,
    InMemoryBitmaps,
    LedgerBitmap,
    LedgerLayout,
    LedgerSwap,
    Position,
    SwappingBitmaps,
)
from cursor.persistence import chunking
from cursor.persistence.capture import restore
from cursor.persistence.ledger_port import CursorLedgers, RecoveredState
from cursor.persistence.range_collector import RangeCollector
from cursor.persistence.settings import CursorSettings
from cursor.wire import (
    IndexEntry,
    PositionInfoContent,
    ack_index,
    decode_state,
    decode_state_pieces,
)


def recover(
    ledgers: CursorLedgers,
    ledger_id: int,
    settings: CursorSettings,
    layout: LedgerLayout | None = None,
    swap: LedgerSwap | None = None,
    on_marker: Callable[[Position, dict[int, IndexEntry]], None] | None = None,
) -> RecoveredState:
    """`swap` (the incremental persistence) enables lazy loading under the LRU budget;
    `on_marker` learns a marker's mark-delete position and index before anything is swapped
    in or out through it."""

    def complete_state(
        pieces: Iterator[bytes], entry_id: int
    ) -> tuple[PositionInfoContent, RangeCollector]:
        # The ranges become bitmaps as they are decoded: a chunked state is never held whole.
        collected = RangeCollector()
        where = f"cursor ledger {ledger_id} entry {entry_id}"
        content = decode_state_pieces(pieces, where, collected.add)
        if ack_index.ledger_of(content) is not None:
            raise DecodeError(f"entry {entry_id} is one ledger's acks, not a complete state")
        return content, collected

    found = chunking.find_latest_pieces(ledgers, ledger_id, settings.max_entry_size, complete_state)
    content, collected = found.value
    if not ack_index.is_marker(content):
        state = restore(
            content,
            batch_index_level=settings.batch_index_level,
            layout=layout,
            collected=collected,
        )
        return RecoveredState(state, ledger_id, found.entry_id, found.skipped)

    def load(data_ledger: int, entry: IndexEntry) -> LedgerBitmap:
        return load_ledger(ledgers, ledger_id, data_ledger, entry)

    state, index = _from_marker(content, settings, layout, load, swap, on_marker)
    return RecoveredState(state, ledger_id, found.entry_id, found.skipped, index)


def load_ledger(
    ledgers: CursorLedgers, cursor_ledger: int, data_ledger: int, entry: IndexEntry
) -> LedgerBitmap:
    where = f"cursor ledger {cursor_ledger} entry {entry.entry_id}"
    payload = chunking.read_at(ledgers, cursor_ledger, entry.entry_id)
    return ack_index.bitmap_of(decode_state(payload, where), data_ledger, where)


def _from_marker(
    content: PositionInfoContent,
    settings: CursorSettings,
    layout: LedgerLayout | None,
    load: Callable[[int, IndexEntry], LedgerBitmap],
    swap: LedgerSwap | None,
    on_marker: Callable[[Position, dict[int, IndexEntry]], None] | None,
) -> tuple[AckState, dict[int, IndexEntry]]:
    mark_delete = content.mark_delete
    properties, index = ack_index.parse_marker(content)
    index = {i: e for i, e in index.items() if i >= mark_delete.ledger_id}
    if on_marker is not None:
        on_marker(mark_delete, dict(index))
    store: BitmapStore = InMemoryBitmaps()
    lazy = settings.lru_cache and swap is not None
    if lazy and swap is not None:
        store = _lazily_loaded(settings.max_ack_cache_bytes, swap, mark_delete, index, load)
    state = AckState(
        mark_delete,
        batch_index_level=settings.batch_index_level,
        layout=layout,
        bitmaps=store,
        properties=properties,
    )
    if not lazy:
        for data_ledger, entry in sorted(index.items()):
            state.merge_bitmap(data_ledger, load(data_ledger, entry))
    for batch in content.batch_indexes:
        state.restore_batch(batch.position, batch.mask)
    state.take_dirty()
    if mark_delete.ledger_id in index:
        # Its entry may hold entries the mark-delete position has passed since: rewrite it.
        state.mark_dirty([mark_delete.ledger_id])
    return state, index


def _lazily_loaded(
    budget: int,
    swap: LedgerSwap,
    mark_delete: Position,
    index: dict[int, IndexEntry],
    load: Callable[[int, IndexEntry], LedgerBitmap],
) -> SwappingBitmaps:
    store = SwappingBitmaps(budget, swap)
    for data_ledger, entry in index.items():
        store.register(data_ledger, entry.ranges)
    if mark_delete.ledger_id in index:
        bitmap = load(mark_delete.ledger_id, index[mark_delete.ledger_id])
        bitmap.discard_through(mark_delete.entry_id)
        if bitmap.is_empty():
            store.discard(mark_delete.ledger_id)
        else:
            store.install(mark_delete.ledger_id, bitmap, changed=True)
    # The PIP: load from the last ledger back until the budget is spent.
    for data_ledger in sorted(index, reverse=True):
        if data_ledger == mark_delete.ledger_id:
            continue
        if not store.install(data_ledger, load(data_ledger, index[data_ledger])):
            break
    return store
