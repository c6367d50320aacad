"""PIP-81's entry formats, inside PositionInfo as the PIP asks (no protocol change).

- A ledger entry holds one data ledger's individual acks: a PositionInfo with the
  mark-delete position, that ledger's ranges, and the property `...ackIndex.ledger = L`.
- A marker closes a flush: a PositionInfo with the mark-delete position, its properties,
  the batch-index info, `...ackIndex.marker = 1`, and for each data ledger L the entry that
  holds it (`...ackIndex.entry.L`) and its range count (`...ackIndex.ranges.L`, so a state
  can be recovered without loading every ledger).
An unchanged reader that lands on a marker sees a mark-delete position without individual
acks: it redelivers more, it never loses a message. Properties under Pulsar's
`#pulsar.internal.` prefix are the cursor's own, not the user's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from core.errors import DecodeError
from cursor.ack import LedgerBitmap, Position
from cursor.wire.content import (
    BatchIndexes,
    LedgerBits,
    PositionInfoContent,
    RangeEncoding,
    WireRanges,
)

_PREFIX = "#pulsar.internal.ackIndex."
MARKER = _PREFIX + "marker"
LEDGER = _PREFIX + "ledger"
ENTRY = _PREFIX + "entry."
RANGES = _PREFIX + "ranges."


@dataclass(frozen=True)
class IndexEntry:
    entry_id: int  # in the cursor ledger: the single entry or the chunk footer
    ranges: int


def is_marker(content: PositionInfoContent) -> bool:
    return content.properties.get(MARKER) == 1


def ledger_of(content: PositionInfoContent) -> int | None:
    """The data ledger a ledger entry is for; None for any other state."""
    return content.properties.get(LEDGER)


def marker(
    mark_delete: Position,
    properties: Mapping[str, int],
    batches: tuple[BatchIndexes, ...],
    index: Mapping[int, IndexEntry],
) -> PositionInfoContent:
    internal = {MARKER: 1}
    for ledger_id, entry in sorted(index.items()):
        internal[f"{ENTRY}{ledger_id}"] = entry.entry_id
        internal[f"{RANGES}{ledger_id}"] = entry.ranges
    return PositionInfoContent(
        mark_delete=mark_delete,
        batch_indexes=batches,
        properties={**properties, **internal},
    )


def parse_marker(content: PositionInfoContent) -> tuple[dict[str, int], dict[int, IndexEntry]]:
    """(the user's mark-delete properties, the index) of a marker."""
    user = {k: v for k, v in content.properties.items() if not k.startswith(_PREFIX)}
    entries = {
        int(k[len(ENTRY) :]): v for k, v in content.properties.items() if k.startswith(ENTRY)
    }
    ranges = {
        int(k[len(RANGES) :]): v for k, v in content.properties.items() if k.startswith(RANGES)
    }
    if entries.keys() != ranges.keys():
        raise DecodeError("ack-index marker lists entries and range counts for different ledgers")
    return user, {i: IndexEntry(entries[i], ranges[i]) for i in entries}


def ledger_entry(
    mark_delete: Position, ledger_id: int, bitmap: LedgerBitmap, encoding: RangeEncoding
) -> PositionInfoContent:
    ranges = WireRanges()
    bitsets: tuple[LedgerBits, ...] = ()
    if encoding is RangeEncoding.LONG_LIST_MAP:
        bitsets = (LedgerBits(ledger_id, bitmap.java_words()),)
    else:
        firsts, lasts = bitmap.runs_array()
        ranges = WireRanges.of_runs(np.full(firsts.size, ledger_id), firsts, lasts)
    return PositionInfoContent(
        mark_delete=mark_delete, ranges=ranges, bitsets=bitsets, properties={LEDGER: ledger_id}
    )


def bitmap_of(content: PositionInfoContent, ledger_id: int, where: str) -> LedgerBitmap:
    """The bitmap a ledger entry holds, checked to be the one for `ledger_id`."""
    if ledger_of(content) != ledger_id:
        raise DecodeError(f"{where}: holds ledger {ledger_of(content)}, expected {ledger_id}")
    ranges = content.ranges
    if np.any(ranges.lower_ledger != ledger_id) or np.any(ranges.upper_ledger != ledger_id):
        raise DecodeError(f"{where}: ranges of other ledgers in the entry for {ledger_id}")
    bitmap = LedgerBitmap.from_runs(ranges.lower_entry + 1, ranges.upper_entry)
    for bits in content.bitsets:
        if bits.ledger_id != ledger_id:
            raise DecodeError(f"{where}: bit set of ledger {bits.ledger_id} in {ledger_id}'s")
        bitmap.merge(LedgerBitmap.from_words(bits.words))
    return bitmap
