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
