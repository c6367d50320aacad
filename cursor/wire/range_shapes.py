"""Decoding stretches of MessageRange records that share one layout, without delimiting tokens.

Records written from a ledger's runs come in long stretches of one layout (range_runs.py):
the same varint sizes, so the same length. The first record's layout is read from its
tokens; the rows of that length that follow are then checked against the layout 8 bytes at
a time: every fixed byte equal (the lengths included), and every varint byte's
continuation bit set or clear as the layout has it. A row that passes is exactly a
canonical record of that layout, so its values are read at fixed offsets. The first row
that does not pass ends the stretch; range_wire.py decodes what follows.
"""

from __future__ import annotations

import numpy as np

from cursor.ack import U8, U64

_LANE = np.dtype("<u8")
_MAX_SIZE = 8  # longer varints (a negative entry: ten bytes) are left to the token path


def decode_same_layout(buf: U8, position: int, tag: int, out: U64, limit: int) -> tuple[int, int]:
    """Records from `position` laid out like the first, at most `limit`, decoded into `out`
    (4 rows); (how many, their bytes). None at all when the first is not canonical."""
    head = buf[position : position + 64]
    ends = np.flatnonzero(head < 0x80)[:14].tolist()
    if len(ends) < 14:
        return 0, 0
    # With one-byte fixed tokens (which the check below holds the rows to), the values end
    # at tokens 5, 7, 11 and 13 and begin after tokens 4, 6, 10 and 12.
    sizes = (ends[5] - 4, ends[7] - ends[6], ends[11] - ends[10], ends[13] - ends[12])
    if min(sizes) < 1 or max(sizes) > _MAX_SIZE:
        return 0, 0
    row = 10 + sum(sizes)
    # A row and the 8 bytes after it must be there: every read below stays within them.
    rows = min(limit, (buf.size - position - row - 8) // row + 1)
    if rows <= 0:
        return 0, 0
    masks, expected, offsets = _layout(tag, sizes)
    valid: np.ndarray | None = None
    for lane, (mask, value) in enumerate(zip(masks, expected, strict=True)):
        view = np.ndarray((rows,), _LANE, buffer=buf, offset=position + 8 * lane, strides=(row,))
        same = (view & np.uint64(mask)) == np.uint64(value)
        valid = same if valid is None else valid & same
    assert valid is not None
    good = rows if bool(valid.all()) else int(np.argmin(valid))
    for column, (offset, size) in enumerate(zip(offsets, sizes, strict=True)):
        at = position + offset
        view = np.ndarray((good,), _LANE, buffer=buf, offset=at, strides=(row,))
        out[column, :good] = _varints(view, size)
    return good, good * row


def _layout(tag: int, sizes: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    """Per 8-byte lane of a row: the mask of the bytes it checks and what they must be; and
    where each value starts in the row."""
    lower_ledger, lower_entry, upper_ledger, upper_entry = sizes
    inner_lower = 2 + lower_ledger + lower_entry
    inner_upper = 2 + upper_ledger + upper_entry
    mask: list[int] = []
    want: list[int] = []
    offsets: list[int] = []

    def fixed(*values: int) -> None:
        mask.extend([0xFF] * len(values))
        want.extend(values)

    def varint(size: int) -> None:
        offsets.append(len(mask))
        mask.extend([0x80] * size)  # continued but for the last byte
        want.extend([0x80] * (size - 1) + [0])

    fixed(tag, 4 + inner_lower + inner_upper, 0x0A, inner_lower, 0x08)
    varint(lower_ledger)
    fixed(0x10)
    varint(lower_entry)
    fixed(0x12, inner_upper, 0x08)
    varint(upper_ledger)
    fixed(0x10)
    varint(upper_entry)
    lanes = -(-len(mask) // 8)
    mask += [0] * (8 * lanes - len(mask))
    want += [0] * (8 * lanes - len(want))
    masks = [int.from_bytes(bytes(mask[8 * i : 8 * i + 8]), "little") for i in range(lanes)]
    wants = [int.from_bytes(bytes(want[8 * i : 8 * i + 8]), "little") for i in range(lanes)]
    return masks, wants, offsets


def _varints(lanes: U64, size: int) -> U64:
    """Varints of exactly `size` bytes (at most 8) from the start of each lane."""
    kept = lanes & np.uint64((1 << (8 * size)) - 1)
    values = np.empty_like(kept)
    np.bitwise_and(kept, 0x7F, out=values)
    shifted = np.empty_like(kept)
    for k in range(1, size):  # python ints as operands: numpy's fast path
        np.right_shift(kept, k, out=shifted)
        shifted &= 0x7F << (7 * k)
        values |= shifted
    return values
