"""Protobuf varints, many at a time, with numpy.

A varint stores 7 bits a byte, least significant group first; every byte but the last has
its high bit set. An int64 is encoded as its two's complement uint64, so a negative number
always takes 10 bytes. Work is done one byte position at a time over all values (at most 10
passes), never one value at a time.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from cursor.ack import I64, U8, U64

MAX_VARINT_BYTES = 10
_THRESHOLDS = np.array([1 << (7 * k) for k in range(1, MAX_VARINT_BYTES)], dtype=np.uint64)


def varint_sizes(values: U64) -> U8:
    """Bytes each value takes as a varint (1 to 10)."""
    sizes = np.ones(values.shape, dtype=np.uint8)
    for threshold in _THRESHOLDS:
        above = values >= threshold
        if not above.any():
            break
        sizes += above
    return sizes


def encode_varints(values: U64) -> bytes:
    """The varints of `values`, back to back."""
    if values.size == 0:
        return b""
    sizes = varint_sizes(values)
    ends = np.cumsum(sizes, dtype=np.int64)
    out = np.empty(int(ends[-1]), dtype=np.uint8)
    write_varints(out, ends - sizes, values, sizes)
    return out.tobytes()


def write_varints(out: U8, starts: I64, values: U64, sizes: U8) -> None:
    """Write each value's varint (of `sizes` bytes) at its start offset in `out`."""
    out[starts] = (values & 0x7F).astype(np.uint8) | ((sizes > 1).astype(np.uint8) << 7)
    longer = np.flatnonzero(sizes > 1)
    k = 1
    while longer.size:
        group = ((values[longer] >> np.uint64(7 * k)) & 0x7F).astype(np.uint8)
        more = sizes[longer] > k + 1
        out[starts[longer] + k] = group | (more.astype(np.uint8) << 7)
        longer = longer[more]
        k += 1


def decode_varints_at(buf: U8, starts: I64, sizes: NDArray[np.integer]) -> U64:
    """Decode the varints of `sizes` bytes that begin at `starts` in `buf` (already delimited)."""
    values = (buf[starts] & 0x7F).astype(np.uint64)
    longer = np.flatnonzero(sizes > 1)
    k = 1
    while longer.size:
        group = (buf[starts[longer] + k] & 0x7F).astype(np.uint64)
        values[longer] |= group << np.uint64(7 * k)
        longer = longer[sizes[longer] > k + 1]
        k += 1
    return values


def token_ends(buf: U8) -> I64:
    """Where each varint of a varint-only stream ends: at every byte below 0x80.

    Tags, lengths and values of messages made only of integer and nested-message fields are
    all varints, so this delimits every token of such a stream at once.
    """
    return np.flatnonzero(buf < 0x80)


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """One varint at `pos`: (value, position after it). For the few top-level tags."""
    result = shift = 0
    for index in range(pos, min(len(data), pos + MAX_VARINT_BYTES)):
        byte = data[index]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, index + 1
        shift += 7
    raise ValueError(f"truncated or overlong varint at byte {pos}")


# -- lanes: a varint's bytes held in one uint64, for column-wise work without byte loops --

# Operands are python ints, not numpy scalars, where they fit in an int64: numpy takes its
# fast path for those (and its slow one for a python int beyond).
_BYTES_LOW7 = 0x7F7F7F7F7F7F7F7F
BYTES_HIGH = np.uint64(0x8080808080808080)


def varint_width(value: int) -> int:
    """Bytes the varint of a uint64 takes (1 to 10)."""
    return max(1, (value.bit_length() + 6) // 7)


def varint_lanes(values: U64, width: int) -> tuple[U64, U64 | None, U8]:
    """Each value's varint as little-endian bytes: (bytes 0-7, bytes 8-9, sizes).

    `width` is the largest size among `values`; bytes 8 and 9 exist only when it is over 8.
    Bytes past a varint's size are zero. The 7-bit groups are spread into bytes by shifts
    (group k moves up k bits), and a byte carries the continuation bit when any byte above
    it is non-zero: the bytes above are OR-ed down ("smeared"), and adding 0x7f to a byte of
    at most 0x7f sets its high bit exactly when it is non-zero.
    """
    low = np.empty_like(values)
    np.bitwise_and(values, 0x7F, out=low)
    if width == 1:
        ones: U8 = np.ones(values.shape, np.uint8)
        return low, None, ones
    shifted = np.empty_like(values)
    for k in range(1, min(width, 8)):
        np.left_shift(values, k, out=shifted)
        shifted &= 0x7F << (8 * k)
        low |= shifted
    above = np.empty_like(values)
    np.right_shift(low, 8, out=above)
    high = None
    if width > 8:
        top = np.empty_like(values)
        np.right_shift(values, 63, out=top)
        high = np.empty_like(values)
        np.right_shift(values, 56, out=high)
        high &= 0x7F
        high |= top << np.uint64(8)
        above |= (high != 0).astype(np.uint64) << np.uint64(56)
        high |= top << np.uint64(7)  # byte 8 continues into byte 9
    span = 1
    while span < min(width - 1, 8):
        above |= above >> np.uint64(8 * span)
        span *= 2
    above += _BYTES_LOW7
    above &= BYTES_HIGH
    low |= above
    sizes: U8 = np.bitwise_count(above)
    sizes += 1
    if high is not None:
        sizes += (values >> np.uint64(63)).astype(np.uint8)
    return low, high, sizes


def lanes_at(buf: U8, offset: int, count: int) -> U64:
    """The 8 bytes from each of `count` byte offsets of `buf` as uint64s (overlapping,
    unaligned): a varint's bytes are then one gather away. `buf` must hold 7 bytes more."""
    return np.ndarray((count,), np.dtype("<u8"), buffer=buf, offset=offset, strides=(1,))


_KEEP_BYTES = np.array([(1 << min(8 * size, 64)) - 1 for size in range(11)], np.uint64)


def varints_of_lanes(lanes: U64, sizes: I64, width: int) -> U64:
    """Decode varints of `sizes` bytes (at most 8 are read; `width` the largest) from their
    lanes, whatever follows them in the lane. `lanes` is overwritten."""
    lanes &= _KEEP_BYTES[sizes]
    values = np.empty_like(lanes)
    np.bitwise_and(lanes, 0x7F, out=values)
    shifted = np.empty_like(lanes)
    for k in range(1, min(width, 8)):  # python ints as operands: numpy's fast scalar path
        np.right_shift(lanes, k, out=shifted)
        shifted &= 0x7F << (7 * k)
        values |= shifted
    return values
