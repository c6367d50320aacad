"""The acknowledged entries of one ledger as a bitmap: bit n set = entry n acknowledged.

Words are 64-bit and laid out like Java's `BitSet.toLongArray()`, which is what a
`LongListMap` persists, so encoding is a copy. Only the span of words that can hold set bits
is allocated (from `base`), and it grows geometrically. Single acks and membership are O(1);
the number of runs (Pulsar's "ranges") is kept up to date, so the pause-on-overflow gate
costs nothing. Bulk work (runs, counting, building from ranges) is vectorised.
"""

from __future__ import annotations

import numpy as np

from cursor.ack.dtypes import I64, U64

ALL_ONES_INT = 0xFFFFFFFFFFFFFFFF
ALL_ONES = np.uint64(ALL_ONES_INT)
_OVERHEAD_BYTES = 120  # the object, its array header and its dict slot, roughly


def count_runs(words: U64, carry: int = 0) -> int:
    """Runs of set bits that start inside `words`; `carry` is the bit just before them."""
    if words.size == 0:
        return 0
    previous = np.empty_like(words)
    previous[0] = carry
    previous[1:] = words[:-1] >> np.uint64(63)
    starts = words & ~((words << np.uint64(1)) | previous)
    return int(np.bitwise_count(starts).sum())


def _merged(firsts: I64, lasts: I64) -> tuple[I64, I64]:
    """Sorted, disjoint runs covering the same entries; overlaps would cancel toggles."""
    order = np.lexsort((lasts, firsts))
    firsts, lasts = firsts[order], lasts[order]
    reach = np.maximum.accumulate(lasts)
    new_run = np.empty(firsts.size, bool)
    new_run[0] = True
    new_run[1:] = firsts[1:] > reach[:-1] + 1
    return firsts[new_run], np.maximum.reduceat(lasts, np.flatnonzero(new_run))


def _toggle_sorted(toggles: U64, points: I64, base: int) -> None:
    """Flip bit `point` for each of `points`, ascending and distinct: the bits landing in one
    word are OR-ed together first (a reduction per run of equal words, which is much faster
    than `np.bitwise_xor.at` point by point), then each word is flipped once."""
    words = points >> 6
    first = np.empty(words.size, np.bool_)
    first[0] = True
    np.not_equal(words[1:], words[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    bits = np.left_shift(np.uint64(1), (points & 63).astype(np.uint64))
    toggles[words[starts] - base] ^= np.bitwise_or.reduceat(bits, starts)


def _trailing_ones(word: int) -> int:
    return (word ^ (word + 1)).bit_length() - 1


class LedgerBitmap:
    __slots__ = ("_base", "_words", "runs")

    def __init__(self, words: U64 | None = None, base: int = 0) -> None:
        self._words: U64 = np.zeros(0, np.uint64) if words is None else words
        self._base = base  # absolute index of _words[0]
        self.runs = count_runs(self._words)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_words(cls, words: U64) -> LedgerBitmap:
        """From Java BitSet words (word 0 = entries 0..63)."""
        nonzero = np.flatnonzero(words)
        if nonzero.size == 0:
            return cls()
        first, last = int(nonzero[0]), int(nonzero[-1])
        return cls(words[first : last + 1].astype(np.uint64, copy=True), first)

    @classmethod
    def from_runs(cls, firsts: I64, lasts: I64) -> LedgerBitmap:
        """From closed entry ranges [first, last], in any order, overlapping or not.

        Each range toggles the bit parity at `first` and `last + 1`; a prefix XOR over the
        bits then sets exactly the covered entries: within a word by doubling shifts, across
        words by the running parity of the words before.
        """
        nonempty = firsts <= lasts
        if not nonempty.all():  # an empty run sets nothing (and must not toggle anything)
            firsts, lasts = firsts[nonempty], lasts[nonempty]
        if firsts.size == 0:
            return cls()
        if firsts.size > 1 and bool(np.all(firsts[1:] > lasts[:-1] + 1)):
            starts, ends = firsts, lasts  # already sorted, disjoint and not touching
        else:
            starts, ends = _merged(firsts, lasts)
        base = int(starts[0]) >> 6
        toggles = np.zeros((int(ends.max()) + 1 >> 6) - base + 1, np.uint64)
        for points in (starts, ends + 1):
            _toggle_sorted(toggles, points, base)
        words = toggles.copy()
        for shift in (1, 2, 4, 8, 16, 32):
            words ^= words << np.uint64(shift)
        parity = (np.bitwise_count(toggles) & 1).astype(np.uint8)
        carried = np.bitwise_xor.accumulate(parity) ^ parity  # parity of the words before
        words[carried == 1] ^= ALL_ONES
        return cls(words, base)

    # -- single entries ------------------------------------------------------------------

    def contains(self, entry: int) -> bool:
        index = (entry >> 6) - self._base
        if index < 0 or index >= self._words.size:
            return False
        return (int(self._words[index]) >> (entry & 63)) & 1 == 1

    def add(self, entry: int) -> int | None:
        """Set one entry; the change in runs, or None when it was already set."""
        if self.contains(entry):
            return None
        delta = 1 - self.contains(entry - 1) - self.contains(entry + 1)
        index = self._index_for(entry >> 6)
        self._words[index] |= np.uint64(1 << (entry & 63))
        self.runs += delta
        return delta

    def run_end(self, entry: int) -> int:
        """The last entry of the run of set bits that starts at `entry` (which is set)."""
        index = (entry >> 6) - self._base
        ones = _trailing_ones(int(self._words[index]) >> (entry & 63))
        if ones < 64 - (entry & 63):
            return entry + ones - 1
        # The run reaches past this word: find the first word that is not full, looking
        # at geometrically larger slices so a long scan stays proportional to the run.
        start, step = index + 1, 16
        while start < self._words.size:
            chunk = self._words[start : start + step]
            partial = np.flatnonzero(chunk != ALL_ONES)
            if partial.size:
                at = start + int(partial[0])
                return (self._base + at) * 64 + _trailing_ones(int(self._words[at])) - 1
            start, step = start + step, step * 2
        return (self._base + self._words.size) * 64 - 1

    # -- ranges --------------------------------------------------------------------------

    def add_range(self, first: int, last: int) -> int:
        """Set entries first..last (inclusive); the change in runs."""
        self._index_for(first >> 6)
        high = self._index_for(last >> 6)
        low = (first >> 6) - self._base
        before = self._runs_around(low, high)
        if low == high:
            self._words[low] |= np.uint64(((1 << (last - first + 1)) - 1) << (first & 63))
        else:
            self._words[low] |= np.uint64((ALL_ONES_INT << (first & 63)) & ALL_ONES_INT)
            self._words[low + 1 : high] = ALL_ONES
            self._words[high] |= np.uint64((1 << ((last & 63) + 1)) - 1)
        delta = self._runs_around(low, high) - before
        self.runs += delta
        return delta

    def add_entries(self, entries: I64) -> None:
        """Set many entries at once."""
        if entries.size == 0:
            return
        self._index_for(int(entries.min()) >> 6)
        self._index_for(int(entries.max()) >> 6)
        np.bitwise_or.at(
            self._words,
            (entries >> 6) - self._base,
            np.left_shift(np.uint64(1), (entries & 63).astype(np.uint64)),
        )
        self.runs = count_runs(self._words)

    def merge(self, other: LedgerBitmap) -> None:
        """Set every entry set in `other`."""
        if other.is_empty():
            return
        first = other._base
        self._index_for(first)
        self._index_for(first + other._words.size - 1)
        offset = first - self._base
        self._words[offset : offset + other._words.size] |= other._words
        self.runs = count_runs(self._words)

    def discard_through(self, entry: int) -> int:
        """Clear every entry up to and including `entry`; the change in runs."""
        index = (entry >> 6) - self._base
        if index < 0:
            return 0
        if index >= self._words.size:
            delta = -self.runs
            self._words, self._base, self.runs = np.zeros(0, np.uint64), 0, 0
            return delta
        before = count_runs(self._words[: index + 2])
        self._words[index] &= np.uint64(ALL_ONES_INT ^ ((1 << ((entry & 63) + 1)) - 1))
        after = count_runs(self._words[index : index + 2])
        drop = index  # whole words now empty
        if drop * 2 >= self._words.size:
            self._words = self._words[drop:].copy()  # give the memory back
        else:
            self._words[:drop] = 0
            drop = 0
        self._base += drop
        delta = after - before
        self.runs += delta
        return delta

    def runs_array(self) -> tuple[I64, I64]:
        """Every run as (first entries, last entries), ascending.

        A run starts at a set bit after a clear one and ends before a clear bit after a set
        one: both edges are found a word at a time, and only their positions are unpacked
        (they alternate, start then end + 1).
        """
        if self._words.size == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty
        words = np.zeros(self._words.size + 1, np.uint64)
        words[:-1] = self._words
        before = words << np.uint64(1)  # each bit's predecessor, carried across words
        before[1:] |= words[:-1] >> np.uint64(63)
        edges = (words ^ before).view(np.uint8)
        bits = np.unpackbits(edges, bitorder="little").view(np.bool_)  # nonzero is fastest on bools
        positions = np.flatnonzero(bits)
        positions += self._base * 64
        return positions[0::2], positions[1::2] - 1

    # -- whole bitmap --------------------------------------------------------------------

    def is_empty(self) -> bool:
        return self.runs == 0

    def cardinality(self) -> int:
        return int(np.bitwise_count(self._words).sum())

    def java_words(self) -> U64:
        """Java `BitSet.toLongArray()`: words from entry 0, trailing zero words trimmed."""
        nonzero = np.flatnonzero(self._words)
        if nonzero.size == 0:
            return np.zeros(0, np.uint64)
        words = np.zeros(self._base + int(nonzero[-1]) + 1, np.uint64)
        words[self._base :] = self._words[: int(nonzero[-1]) + 1]
        return words

    @property
    def nbytes(self) -> int:
        """Memory held, for the LRU cache's budget."""
        return int(self._words.nbytes) + _OVERHEAD_BYTES

    def copy(self) -> LedgerBitmap:
        return LedgerBitmap(self._words.copy(), self._base)

    # -- internals -----------------------------------------------------------------------

    def _index_for(self, word: int) -> int:
        """The array index of absolute word `word`, growing the array to hold it."""
        size = self._words.size
        if size == 0:
            self._words, self._base = np.zeros(4, np.uint64), word
            return 0
        index = word - self._base
        if 0 <= index < size:
            return index
        if index >= size:
            grown = np.zeros(max(2 * size, index + 1), np.uint64)
            grown[:size] = self._words
            self._words = grown
            return index
        new_base = max(0, min(word, self._base - size))
        grown = np.zeros(size + self._base - new_base, np.uint64)
        grown[self._base - new_base :] = self._words
        self._words, self._base = grown, new_base
        return word - new_base

    def _runs_around(self, low: int, high: int) -> int:
        """Runs starting in words low..high+1, the only ones a change in low..high can move."""
        carry = int(self._words[low - 1]) >> 63 if low > 0 else 0
        return count_runs(self._words[low : high + 2], carry)
