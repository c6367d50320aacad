"""PositionInfo and ManagedCursorInfo as JSON, for people and scripts (the cursor CLI).

Field names are the .proto's. MessageRanges are `[lowerLedger, lowerEntry, upperLedger,
upperEntry]` (open-closed, as on the wire); `acked` lists the same acknowledgments as closed
runs `[ledger, firstEntry, lastEntry]` whichever encoding carried them. Encoding goes through
an ack state, so what comes out is what Pulsar would write for those acknowledgments:
folded into the mark-delete position, merged, in position order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cursor.ack import BEFORE_FIRST, AckState, LedgerBitmap, Position
from cursor.durable.json_input import CursorInfoDoc, PositionDoc, PositionInfoDoc
from cursor.persistence import apply_ranges, capture
from cursor.wire import (
    BatchIndexes,
    CursorInfoContent,
    LedgerBits,
    PositionInfoContent,
    RangeEncoding,
    WireRanges,
)

Json = dict[str, Any]
_NO_CAP = 2**62


def position_info_json(content: PositionInfoContent) -> Json:
    return {
        "kind": "position-info",
        "markDelete": _position(content.mark_delete),
        **_acks_json(content.mark_delete, content.ranges, content.bitsets),
        "batchedEntryDeletionIndexInfo": [_batch(b) for b in content.batch_indexes],
        "properties": dict(content.properties),
    }


def cursor_info_json(content: CursorInfoContent) -> Json:
    mark_delete = content.mark_delete
    return {
        "kind": "cursor-info",
        "cursorsLedgerId": content.cursors_ledger_id,
        "markDelete": None if mark_delete is None else _position(mark_delete),
        **_acks_json(mark_delete or BEFORE_FIRST, content.ranges, ()),
        "batchedEntryDeletionIndexInfo": [_batch(b) for b in content.batch_indexes],
        "properties": dict(content.properties),
        "lastActive": content.last_active,
        "cursorProperties": dict(content.cursor_properties),
    }


def position_info_from_json(doc: PositionInfoDoc, encoding: RangeEncoding) -> PositionInfoContent:
    mark_delete = _parse_position(doc.markDelete)
    state = _state(doc, mark_delete)
    content, _ = capture(state, encoding, _NO_CAP, _NO_CAP)
    return PositionInfoContent(
        mark_delete=mark_delete,
        ranges=content.ranges,
        bitsets=content.bitsets,
        batch_indexes=_batches(doc),
        properties=dict(doc.properties),
    )


def cursor_info_from_json(doc: CursorInfoDoc) -> CursorInfoContent:
    mark_delete = None if doc.markDelete is None else _parse_position(doc.markDelete)
    state = _state(doc, mark_delete or BEFORE_FIRST)
    content, _ = capture(state, RangeEncoding.MESSAGE_RANGE, _NO_CAP, _NO_CAP)
    return CursorInfoContent(
        cursors_ledger_id=doc.cursorsLedgerId,
        mark_delete=mark_delete,
        ranges=content.ranges,
        properties=dict(doc.properties),
        last_active=doc.lastActive,
        batch_indexes=_batches(doc),
        cursor_properties=dict(doc.cursorProperties),
    )


def _acks_json(mark_delete: Position, ranges: WireRanges, bitsets: tuple[LedgerBits, ...]) -> Json:
    state = AckState(mark_delete)
    apply_ranges(state, ranges)
    for bits in bitsets:
        state.merge_bitmap(bits.ledger_id, LedgerBitmap.from_words(bits.words))
    acked = []
    for ledger_id in state.ledger_ids():
        bitmap = state.bitmaps.get(ledger_id)
        if bitmap is not None:
            firsts, lasts = bitmap.runs_array()
            acked += [
                [ledger_id, f, last]
                for f, last in zip(firsts.tolist(), lasts.tolist(), strict=True)
            ]
    columns = [ranges.lower_ledger, ranges.lower_entry, ranges.upper_ledger, ranges.upper_entry]
    return {
        "individualDeletedMessages": np.column_stack(columns).tolist() if len(ranges) else [],
        "individualDeletedMessageRanges": [
            {"key": b.ledger_id, "values": b.words.view(np.int64).tolist()} for b in bitsets
        ],
        "rangeCount": state.range_count,
        "acked": acked,
    }


def _state(doc: PositionInfoDoc | CursorInfoDoc, mark_delete: Position) -> AckState:
    """The document's acknowledgments, whichever of the three lists carry them (checked by
    json_input already: what is left to refuse is what no ack state can hold)."""
    state = AckState(mark_delete)
    raw = np.array(doc.individualDeletedMessages, np.int64).reshape(-1, 4)
    apply_ranges(state, WireRanges(*(raw[:, i].copy() for i in range(4))))
    for item in doc.individualDeletedMessageRanges:
        words = np.array(item.values, np.int64).view(np.uint64)
        state.merge_bitmap(item.key, LedgerBitmap.from_words(words))
    runs = np.array(doc.acked, np.int64).reshape(-1, 3)
    apply_ranges(state, WireRanges.of_runs(runs[:, 0].copy(), runs[:, 1], runs[:, 2].copy()))
    return state


def _batches(doc: PositionInfoDoc | CursorInfoDoc) -> tuple[BatchIndexes, ...]:
    return tuple(
        BatchIndexes(Position(b.ledgerId, b.entryId), tuple(b.deleteSet))
        for b in doc.batchedEntryDeletionIndexInfo
    )


def _position(position: Position) -> Json:
    return {"ledgerId": position.ledger_id, "entryId": position.entry_id}


def _parse_position(raw: PositionDoc) -> Position:
    return Position(raw.ledgerId, raw.entryId)


def _batch(batch: BatchIndexes) -> Json:
    ledger_id, entry_id = batch.position
    return {"ledgerId": ledger_id, "entryId": entry_id, "deleteSet": list(batch.delete_set)}
