"""Repeated `MessageRange` fields, encoded and decoded column-wise with numpy.

A canonical MessageRange record (what Java and we write) is 14 varints in a row:

    tag  len  0a n1 08 ledger 10 entry   12 n2 08 ledger 10 entry
              (lowerEndpoint)            (upperEndpoint)

Every byte below 0x80 ends one of them, so one `flatnonzero` delimits a whole run of
records; reshaped to (records, 14) they are validated and decoded column by column. A record
that is not canonical (unknown fields, other field order) ends the vectorised run; the
caller parses it with protobuf and carries on.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from cursor.ack import I64, U8, U64
from cursor.wire.content import WireRanges
from cursor.wire.varint import decode_varints_at, token_ends, varint_sizes, write_varints

TOKENS = 14
_BATCH = 1 << 18  # records encoded per numpy pass: bounds temporary memory
_WINDOW = 1 << 18  # bytes delimited per pass when decoding: small enough to stay in cache
_VALUES = (5, 7, 11, 13)  # token columns holding the four numbers


def encode_message_ranges(ranges: WireRanges, tag: int) -> bytes:
    """Records for a repeated MessageRange field whose tag byte is `tag`."""
    parts = []
    for start in range(0, len(ranges), _BATCH):
        stop = start + _BATCH
        columns = [getattr(ranges, name)[start:stop].view(np.uint64) for name in _FIELDS]
        parts.append(_encode_batch(columns, tag))
    return b"".join(parts)


_FIELDS = ("lower_ledger", "lower_entry", "upper_ledger", "upper_entry")


def _encode_batch(values: list[U64], tag: int) -> bytes:
    # Offsets inside a record: tag, len, 0a, n1, 08 | ledger | 10 | entry | 12, n2, 08 |
    # ledger | 10 | entry. Only the four values vary in size.
    sizes = [varint_sizes(column) for column in values]
    wide = [size.astype(np.int64) for size in sizes]
    lengths = 10 + wide[0] + wide[1] + wide[2] + wide[3]
    record = np.zeros(lengths.size, np.int64)
    np.cumsum(lengths[:-1], out=record[1:])
    out = np.empty(int(record[-1] + lengths[-1]), np.uint8)
    out[record] = tag
    out[record + 1] = lengths - 2
    out[record + 2] = 0x0A
    out[record + 3] = 2 + wide[0] + wide[1]
    out[record + 4] = 0x08
    write_varints(out, record + 5, values[0], sizes[0])
    at = record + 5 + wide[0]
    out[at] = 0x10
    write_varints(out, at + 1, values[1], sizes[1])
    at += 1 + wide[1]
    out[at] = 0x12
    out[at + 1] = 2 + wide[2] + wide[3]
    out[at + 2] = 0x08
    write_varints(out, at + 3, values[2], sizes[2])
    at += 3 + wide[2]
    out[at] = 0x10
    write_varints(out, at + 1, values[3], sizes[3])
    return out.tobytes()


def decode_range_run(buf: U8, start: int, tag: int) -> tuple[WireRanges, int]:
    """Decode consecutive canonical records from `start`; (ranges, offset after them).

    Works through small windows so each pass over the token arrays stays in cache, and
    writes straight into preallocated columns (a record takes at least 14 bytes).
    """
    capacity = (buf.size - start) // TOKENS + 1
    out = [np.empty(capacity, np.uint64) for _ in _VALUES]
    count = 0
    position = start
    while position < buf.size:
        window = buf[position : position + _WINDOW]
        ends = token_ends(window)
        rows = ends.size // TOKENS
        if rows == 0:
            break
        table = ends[: rows * TOKENS].reshape(rows, TOKENS)
        columns = [table[:, column] for column in (0, *_VALUES)]
        valid = _canonical(window, columns, tag)
        good = rows if bool(valid.all()) else int(np.argmin(valid))
        if good == 0:
            break
        _decode_values(window, [column[:good] for column in columns], out, count)
        count += good
        position += int(columns[-1][good - 1]) + 1
        if good < rows:
            break
    ranges = WireRanges(*(column[:count].view(np.int64) for column in out))
    return ranges, position


def _canonical(window: U8, columns: list[I64], tag: int) -> NDArray[np.bool_]:
    """Check a record's fixed bytes from its start and the ends of its four values.

    With tag, length, 0a, n1 and 08 one byte each, the lower ledger runs from start+5 to
    its end e5; then come 10, the lower entry to e7, then 12, n2, 08, the upper ledger to
    e11, then 10 and the upper entry to e13, the end of the record.
    """
    record, e5, e7, e11, e13 = columns
    previous_end = np.empty_like(record)
    previous_end[0] = -1
    previous_end[1:] = e13[:-1]
    valid: NDArray[np.bool_] = record == previous_end + 1
    valid &= window[record] == tag
    # The lengths are one byte each: they must end their varint.
    valid &= (window[record + 1] < 0x80) & (window[record + 3] < 0x80) & (window[e7 + 2] < 0x80)
    valid &= window[record + 1] == e13 - record - 1
    valid &= window[record + 2] == 0x0A
    valid &= window[record + 3] == e7 - record - 3
    valid &= window[record + 4] == 0x08
    valid &= (e5 > record + 4) & (e7 > e5 + 1) & (e11 > e7 + 3) & (e13 > e11 + 1)
    valid &= window[e5 + 1] == 0x10
    valid &= window[e7 + 1] == 0x12
    valid &= window[e7 + 2] == e13 - e7 - 2
    valid &= window[e7 + 3] == 0x08
    valid &= window[e11 + 1] == 0x10
    for low, high in ((record + 4, e5), (e5 + 1, e7), (e7 + 3, e11), (e11 + 1, e13)):
        # A 10-byte varint carries one more bit only; more would overflow 64 bits.
        size = high - low
        valid &= (size < 10) | ((size == 10) & (window[high] <= 1))
    return valid


def _decode_values(window: U8, columns: list[I64], out: list[U64], at: int) -> None:
    record, e5, e7, e11, e13 = columns
    for target, low, high in zip(
        out, (record + 4, e5 + 1, e7 + 3, e11 + 1), (e5, e7, e11, e13), strict=True
    ):
        target[at : at + record.size] = decode_varints_at(window, low + 1, high - low)
