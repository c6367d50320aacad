"""Ledgers' acknowledged runs as MessageRange records, encoded a shape at a time.

Runs from a bitmap are sorted and disjoint, so along a ledger the entry ids only grow: the
varint sizes of the lower and upper entries change at a handful of places (where a power of
128 is crossed), found by binary search. Between two such places every record has the same
layout and length, so the records are the rows of a matrix: a template row holds the fixed
bytes and the ledger id, and each entry's varint is one integer store per row. Nothing is
compacted and no size is computed per record. The bytes are those of the general encoder
(range_encode.py), which takes the ledgers with few runs, batched, and anything unusual.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import pairwise
from typing import Any

import numpy as np

from cursor.ack import I64, U64
from cursor.wire.content import WireRanges
from cursor.wire.range_encode import message_range_parts
from cursor.wire.varint import varint_width

LedgerRuns = tuple[int, I64, I64]  # a ledger id, the first and the last entry of each run
_MIN_RUNS = 1024  # below this a ledger waits to be encoded with others, in one batch
_BATCH = 1 << 16
_THRESHOLDS = [1 << (7 * k) for k in range(1, 9)]
_STORES: dict[int, np.dtype[Any]] = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}
_STORES[8] = np.dtype("<u8")


def ledger_run_pieces(runs: Iterable[LedgerRuns], tag: int) -> Iterator[memoryview]:
    """The records of every run, ledger after ledger, in pieces."""
    held: list[LedgerRuns] = []
    size = 0
    for ledger_id, firsts, lasts in runs:
        if firsts.size >= _MIN_RUNS and _sorted(firsts, lasts):
            yield from _general(held, tag)
            held, size = [], 0
            yield from _by_shape(ledger_id, firsts, lasts, tag)
            continue
        held.append((ledger_id, firsts, lasts))
        size += firsts.size
        if size >= _BATCH:
            yield from _general(held, tag)
            held, size = [], 0
    yield from _general(held, tag)


def _sorted(firsts: I64, lasts: I64) -> bool:
    return bool(np.all(firsts <= lasts)) and bool(np.all(firsts[1:] > lasts[:-1]))


def _general(held: list[LedgerRuns], tag: int) -> list[memoryview]:
    if not held:
        return []
    ledgers = np.repeat(np.array([r[0] for r in held], np.int64), [r[1].size for r in held])
    lower = np.concatenate([r[1] for r in held]) - 1
    upper = np.concatenate([r[2] for r in held])
    return message_range_parts(WireRanges(ledgers, lower, ledgers, upper), tag)


def _by_shape(ledger_id: int, firsts: I64, lasts: I64, tag: int) -> Iterator[memoryview]:
    lower, upper = firsts - 1, lasts
    cuts = {0, lower.size}
    for values in (lower, upper):
        cuts.update(np.searchsorted(values, _THRESHOLDS).tolist())
        cuts.add(int(np.searchsorted(values, 0)))  # a run from entry 0: lower endpoint -1
    bounds = sorted(cuts)
    for start, stop in pairwise(bounds):
        if start == stop:
            continue
        low, high = lower[start:stop], upper[start:stop]
        lower_size, upper_size = (
            varint_width(int(v[0]) & 0xFFFF_FFFF_FFFF_FFFF) for v in (low, high)
        )
        if ledger_id < 0 or max(lower_size, upper_size) > 8:
            ledgers = np.full(low.size, ledger_id, np.int64)
            yield from message_range_parts(WireRanges(ledgers, low, ledgers, high), tag)
        else:
            yield _segment(ledger_id, low, high, lower_size, upper_size, tag)


def _segment(
    ledger_id: int, lower: I64, upper: I64, lower_size: int, upper_size: int, tag: int
) -> memoryview:
    """Records whose entries all take `lower_size` and `upper_size` bytes."""
    ledger = _varint(ledger_id)
    inner_lower = 2 + len(ledger) + lower_size
    inner_upper = 2 + len(ledger) + upper_size
    template = b"".join(
        (
            bytes((tag, 4 + inner_lower + inner_upper, 0x0A, inner_lower, 0x08)),
            ledger,
            b"\x10",
            bytes(lower_size),
            bytes((0x12, inner_upper, 0x08)),
            ledger,
            b"\x10",
            bytes(upper_size),
        )
    )
    row, rows = len(template), lower.size
    out = np.empty(rows * row + 8, np.uint8)  # a store may run 3 bytes past the last row
    out[: rows * row].reshape(rows, row)[:] = np.frombuffer(template, np.uint8)
    lower_at = 5 + len(ledger) + 1
    for values, size, at in ((lower, lower_size, lower_at), (upper, upper_size, row - upper_size)):
        store = next(width for width in (1, 2, 4, 8) if width >= size)
        # The bytes a wider store runs over are rewritten with what the template has there
        # (for the upper entry: the start of the next row, which is the same).
        after = (template[at + size :] + template)[: store - size]
        lane = _lanes(values.view(np.uint64), size)
        lane |= int.from_bytes(after, "little") << (8 * size)
        view = np.ndarray((rows,), _STORES[store], buffer=out, offset=at, strides=(row,))
        view[...] = lane
    return out[: rows * row].data


def _lanes(values: U64, size: int) -> U64:
    """Varints of exactly `size` bytes (at most 8) as little-endian uint64s."""
    lane = np.empty_like(values)
    np.bitwise_and(values, 0x7F, out=lane)  # python ints as operands: numpy's fast path
    shifted = np.empty_like(values)
    for k in range(1, size):
        np.left_shift(values, k, out=shifted)
        shifted &= 0x7F << (8 * k)
        lane |= shifted
    lane |= sum(0x80 << (8 * k) for k in range(size - 1))
    return lane


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFF_FFFF_FFFF_FFFF
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
