"""Decoding repeated `MessageRange` fields column-wise with numpy.

A canonical MessageRange record (what Java and we write, see range_encode.py) is 14 varints
in a row:

    tag  len  0a n1 08 ledger 10 entry   12 n2 08 ledger 10 entry
              (lowerEndpoint)            (upperEndpoint)

Long stretches of records of one layout (what a ledger's sorted runs give) are checked and
decoded without delimiting anything (range_shapes.py). Otherwise: every byte below 0x80
ends one of the varints, so one `flatnonzero` delimits a whole window of records; reshaped
to (records, 14) they are validated and decoded column by column. The bytes are read 8 at a
time ("lanes", see varint.py): four loads per record hold all ten fixed bytes and, unless a
value is unusually long, the four values too. A record that is not canonical (unknown
fields, other field order) ends the vectorised run; the caller parses it with protobuf and
carries on.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from cursor.ack import I64, U8, U64
from cursor.wire.content import WireRanges
from cursor.wire.range_shapes import decode_same_layout
from cursor.wire.varint import decode_varints_at, lanes_at, token_ends, varints_of_lanes

TOKENS = 14
_WINDOW = 1 << 18  # bytes delimited per pass at most: small enough to stay in cache
_FIRST_WINDOW = 1 << 12  # after a stretch of one layout: the next may start soon
_FIRST_STRETCH = 1 << 13  # records checked against one layout at first (doubling)
_MIN_STRETCH = 16  # a shorter stretch is cheaper to decode with the others
_LONGEST = 10 + 4 * 8  # bytes of the longest record a stretch takes
_COLUMNS = (0, 5, 7, 11, 13)  # token ends used: the tag, then each value's last byte
_HEAD_FIXED = 0x08_000A_0000  # tag len 0a n1 08, with tag, len and n1 zero
_MID_FIXED = 0x08_0012  # 12 n2 08, with n2 zero
_MAX_VARINT = 10
# Per lane (rows of the (4, rows) arrays): where it is loaded, relative to the token end
# before it; the mask of its fixed bytes; how many bytes those take; so how many are left
# for the value that follows in the same lane.
_LANE_AFTER = np.array([[0], [1], [1], [1]], np.int64)
_FIXED_MASKS = np.array([[0xFF_FFFF_FFFF], [0xFF], [0xFF_FFFF], [0xFF]], np.uint64)
_LANE_SKIP = np.array([[40], [8], [24], [8]], np.uint64)
_LANE_ROOM = np.array([3, 7, 5, 7], np.int64)
_FIXED_BEFORE = np.array([[4], [1], [3], [1]], np.int64)  # bytes between token ends


def decode_range_run(
    buf: U8, start: int, tag: int, stop_after: int | None = None
) -> tuple[WireRanges, int]:
    """Decode consecutive canonical records from `start`; (ranges, offset after them). With
    `stop_after`, stop once about that many bytes are decoded (a caller handing ranges on
    as it goes holds no more than that many at a time).

    Stretches of records of one layout (what a ledger's sorted runs give) are decoded
    without delimiting tokens (range_shapes.py); anything else through windows of tokens,
    small right after a stretch, larger while stretches keep failing, each pass small
    enough to stay in cache. Values go straight into preallocated columns (a record takes
    at least 14 bytes).
    """
    end = buf.size
    if stop_after is not None:  # one more pass may run past it: a stretch or a window
        end = min(end, start + stop_after + max(_WINDOW * _LONGEST, _WINDOW))
    capacity = (end - start) // TOKENS + 1
    out = np.empty((4, capacity), np.uint64)
    count = 0
    position = start
    window, limit = _FIRST_WINDOW, _FIRST_STRETCH
    stop = buf.size if stop_after is None else start + stop_after
    while position < min(stop, buf.size):
        rows, size = decode_same_layout(buf, position, tag, out[:, count:], limit)
        if rows >= _MIN_STRETCH:
            count, position = count + rows, position + size
            window, limit = _FIRST_WINDOW, min(2 * limit, _WINDOW) if rows == limit else limit
            continue
        ends = token_ends(buf[position : position + window])
        rows = ends.size // TOKENS
        if rows == 0:
            if window < _WINDOW and position + window < buf.size:
                window *= 2  # a record longer than the window: widen it
                continue
            break
        table = ends[: rows * TOKENS].reshape(rows, TOKENS)
        ends_of = np.ascontiguousarray(table[:, _COLUMNS].T)
        good = _decode_window(buf, position, ends_of, tag, out[:, count:])
        if good == 0:
            break
        count += good
        position += int(ends_of[4, good - 1]) + 1
        if good < rows:
            break
        window, limit = min(2 * window, _WINDOW), _FIRST_STRETCH
    ranges = WireRanges(*(column[:count].view(np.int64) for column in out))
    return ranges, position


def _decode_window(buf: U8, position: int, ends_of: I64, tag: int, out: U64) -> int:
    """Validate the window's rows, decode the canonical prefix into `out`; its length.

    All four lanes of a record are loaded at once, as a (4, rows) array: from the tag (tag
    len 0a n1 08 + 3 bytes of the lower ledger), after the lower ledger (10 + 7 bytes of the
    lower entry), after the lower entry (12 n2 08 + 5 bytes of the upper ledger) and after
    the upper ledger (10 + 7 bytes of the upper entry).
    """
    span = int(ends_of[4, -1]) + 1
    window = buf[position : position + span]
    if position + span + 7 <= buf.size:
        lanes = lanes_at(buf, position, span)
    else:  # the last bytes of the buffer: lanes must not read past it
        padded = np.zeros(span + 8, np.uint8)
        padded[:span] = window
        lanes = lanes_at(padded, 0, span)
    record, _, e7, _, e13 = ends_of
    loaded = lanes[ends_of[:4] + _LANE_AFTER]
    expected = np.empty_like(ends_of[:4])
    length = e13 - record - 1
    np.left_shift(length, 8, out=expected[0])
    expected[0] |= (e7 - record - 3) << 24
    expected[0] |= _HEAD_FIXED | tag
    np.subtract(e13, e7, out=expected[2])
    expected[2] -= 2
    expected[2] <<= 8
    expected[2] |= _MID_FIXED
    expected[1::2] = 0x10
    valid = ((loaded & _FIXED_MASKS).view(np.int64) == expected).all(axis=0)
    # A one-byte length (so n1 and n2 too): then all ten fixed bytes are whole tokens, and
    # each value runs from the byte after the fixed bytes before it to its token end.
    valid &= length < 0x80
    valid[0] &= record[0] == 0
    valid[1:] &= record[1:] == e13[:-1] + 1
    sizes = np.diff(ends_of, axis=0)
    sizes -= _FIXED_BEFORE
    if int(sizes.max()) >= _MAX_VARINT:
        valid &= _fits_64_bits(window, sizes, ends_of[1:]).all(axis=0)
    good = valid.size if bool(valid.all()) else int(np.argmin(valid))
    if good == 0:
        return 0
    sizes = sizes[:, :good]
    widest = sizes.max(axis=1)
    source = loaded[:, :good] >> _LANE_SKIP
    for value in np.flatnonzero(widest > _LANE_ROOM).tolist():
        # Longer than the room left in the lane it shares: a lane from the value's start.
        source[value] = lanes[ends_of[value + 1, :good] - sizes[value] + 1]
    decoded = varints_of_lanes(source, sizes, int(widest.max()))
    for value, (width, size) in enumerate(zip(widest.tolist(), sizes, strict=True)):
        if width > 8:
            long = np.flatnonzero(size > 8)
            starts = ends_of[value + 1, long] - size[long] + 1
            decoded[value, long] = decode_varints_at(window, starts, size[long])
    out[:, :good] = decoded
    return good


def _fits_64_bits(window: U8, sizes: I64, lasts: I64) -> NDArray[np.bool_]:
    """A 10-byte varint carries one more bit only; more would overflow 64 bits."""
    last_bytes = window[np.minimum(lasts, window.size - 1)]
    fits: NDArray[np.bool_] = (sizes < _MAX_VARINT) | ((sizes == _MAX_VARINT) & (last_bytes <= 1))
    return fits
