"""Encoding repeated `MessageRange` fields column-wise: records laid out padded in a matrix.

A canonical MessageRange record (what Java and we write) is 14 varints in a row:

    tag  len  0a n1 08 ledger 10 entry   12 n2 08 ledger 10 entry
              (lowerEndpoint)            (upperEndpoint)

Only the four values vary in size. A batch of records is laid out as rows of a matrix in
which each value has a slot as wide as the batch's widest (rounded to 1, 2, 4, 8 or 10
bytes, so that a whole varint is written with one integer store); the fixed bytes are
written once per layout, and a mask of the bytes that belong to records compacts the matrix
into the wire bytes in one pass. No work is done per record or per byte in Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cursor.ack import U8, U64
from cursor.wire.content import WireRanges
from cursor.wire.varint import BYTES_HIGH, varint_lanes, varint_width

_BATCH = 1 << 14  # records per pass: the matrix and its mask stay in cache
_FIELDS = ("lower_ledger", "lower_entry", "upper_ledger", "upper_entry")
_SLOTS = {1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 6: 8, 7: 8, 8: 8, 9: 10, 10: 10}
_STORES: dict[int, np.dtype[Any]] = {
    1: np.dtype("u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
    8: np.dtype("<u8"),
}


def encode_message_ranges(ranges: WireRanges, tag: int) -> bytes:
    """Records for a repeated MessageRange field whose tag byte is `tag`."""
    return b"".join(message_range_parts(ranges, tag))


def message_range_parts(ranges: WireRanges, tag: int) -> list[memoryview]:
    """The same records in a few pieces, to join once with the rest of the message."""
    columns = [getattr(ranges, name).view(np.uint64) for name in _FIELDS]
    layouts: dict[tuple[int, ...], _Layout] = {}
    parts = []
    for start in range(0, len(ranges), _BATCH):
        values = [column[start : start + _BATCH] for column in columns]
        widths = tuple(varint_width(int(v.max())) for v in values)
        slots = tuple(_SLOTS[w] for w in widths)
        layout = layouts.get(slots)
        if layout is None:
            layout = layouts[slots] = _Layout(slots, tag)
        parts.append(layout.encode(values, widths).data)
    return parts


class _Layout:
    """Row buffers for one set of slot widths, fixed bytes in place, reused batch to batch.

    Row: tag len 0a n1 08 [ledger] 10 [entry] 12 n2 08 [ledger] 10 [entry]
    """

    def __init__(self, slots: tuple[int, ...], tag: int) -> None:
        self.row = 10 + sum(slots)
        self.offsets = []
        at = 5
        for slot, fixed_after in zip(slots, (1, 3, 1, 0), strict=True):
            self.offsets.append(at)
            at += slot + fixed_after
        self.slots = slots
        self.data = np.zeros(_BATCH * self.row, np.uint8)
        self.keep = np.ones(_BATCH * self.row, np.bool_)
        matrix = self.data[: _BATCH * self.row].reshape(_BATCH, self.row)
        first, second, third, _ = self.offsets
        for column, value in (
            (0, tag),
            (2, 0x0A),
            (4, 0x08),
            (first + slots[0], 0x10),
            (second + slots[1], 0x12),
            (second + slots[1] + 2, 0x08),
            (third + slots[2], 0x10),
        ):
            matrix[:, column] = value

    def encode(self, values: list[U64], widths: tuple[int, ...]) -> U8:
        rows = values[0].size
        sizes = []
        for value, width, slot, offset in zip(
            values, widths, self.slots, self.offsets, strict=True
        ):
            low, high, size = varint_lanes(value, width)
            sizes.append(size)
            self._store(self.data, offset, slot, rows, low, high)
            if slot > 1:
                kept_low = low & BYTES_HIGH
                kept_low <<= 1
                kept_low |= 1
                kept_high = None
                if high is not None:
                    kept_high = (high >> np.uint64(7)) << np.uint64(8)
                    kept_high |= low >> np.uint64(63)
                self._store(self.keep.view(np.uint8), offset, slot, rows, kept_low, kept_high)
        inner_lower = sizes[0] + sizes[1]
        inner_lower += 2
        inner_upper = sizes[2] + sizes[3]
        inner_upper += 2
        matrix = self.data[: rows * self.row].reshape(rows, self.row)
        np.add(inner_lower, inner_upper, out=matrix[:, 1])
        matrix[:, 1] += 4
        matrix[:, 3] = inner_lower
        matrix[:, self.offsets[1] + self.slots[1] + 1] = inner_upper
        return self.data[: rows * self.row][self.keep[: rows * self.row]]

    def _store(
        self, buf: U8, offset: int, slot: int, rows: int, low: U64, high: U64 | None
    ) -> None:
        store = _STORES[min(slot, 8)]
        lane = np.ndarray((rows,), store, buffer=buf, offset=offset, strides=(self.row,))
        lane[...] = low
        if high is not None:
            at = offset + 8
            tail = np.ndarray((rows,), _STORES[2], buffer=buf, offset=at, strides=(self.row,))
            tail[...] = high
