"""LedgerBitmap against a plain set of entries: every operation, runs and Java words."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cursor.ack import LedgerBitmap

ENTRIES = st.integers(0, 700)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), ENTRIES),
        st.tuples(st.just("range"), ENTRIES, st.integers(0, 200)),
        st.tuples(st.just("discard"), st.integers(0, 750)),
        st.tuples(st.just("many"), st.lists(ENTRIES, max_size=20)),
    ),
    max_size=40,
)


def runs_of(entries: set[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for entry in sorted(entries):
        if runs and runs[-1][1] == entry - 1:
            runs[-1] = (runs[-1][0], entry)
        else:
            runs.append((entry, entry))
    return runs


def check(bitmap: LedgerBitmap, model: set[int]) -> None:
    firsts, lasts = bitmap.runs_array()
    assert list(zip(firsts.tolist(), lasts.tolist(), strict=True)) == runs_of(model)
    assert bitmap.runs == len(runs_of(model))
    assert bitmap.cardinality() == len(model)
    words = bitmap.java_words()
    expected = np.zeros((max(model) // 64 + 1) if model else 0, np.uint64)
    for entry in model:
        expected[entry // 64] |= np.uint64(1 << (entry % 64))
    assert np.array_equal(words, expected)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_every_operation_matches_a_set(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    bitmap, model = LedgerBitmap(), set()
    for op in ops:
        if op[0] == "add":
            delta = bitmap.add(op[1])
            assert (delta is None) == (op[1] in model)
            model.add(op[1])
        elif op[0] == "range":
            bitmap.add_range(op[1], op[1] + op[2])
            model.update(range(op[1], op[1] + op[2] + 1))
        elif op[0] == "discard":
            bitmap.discard_through(op[1])
            model = {e for e in model if e > op[1]}
        else:
            bitmap.add_entries(np.array(op[1], np.int64))
            model.update(op[1])
        check(bitmap, model)
        for entry in model:
            assert bitmap.contains(entry)
            end = bitmap.run_end(entry) if entry - 1 not in model else None
            if end is not None:
                assert end + 1 not in model and all(e in model for e in range(entry, end + 1))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(ENTRIES, st.integers(0, 300)), min_size=1, max_size=30))
def test_from_runs_takes_unsorted_overlapping_ranges(ranges: list[tuple[int, int]]) -> None:
    firsts = np.array([first for first, _ in ranges], np.int64)
    lasts = np.array([first + length for first, length in ranges], np.int64)
    model = {e for first, length in ranges for e in range(first, first + length + 1)}
    check(LedgerBitmap.from_runs(firsts, lasts), model)


@settings(max_examples=100, deadline=None)
@given(st.sets(st.integers(0, 5000), max_size=200))
def test_java_words_round_trip(entries: set[int]) -> None:
    bitmap = LedgerBitmap()
    for entry in entries:
        bitmap.add(entry)
    check(LedgerBitmap.from_words(bitmap.java_words()), entries)


def test_a_run_spanning_many_words_ends_where_it_ends() -> None:
    bitmap = LedgerBitmap()
    bitmap.add_range(3, 100_000)
    bitmap.add(100_002)
    assert bitmap.run_end(3) == 100_000
    assert bitmap.runs == 2


def test_memory_follows_the_span_not_the_entry_ids() -> None:
    bitmap = LedgerBitmap()
    bitmap.add_range(10_000_000, 10_000_063)
    assert bitmap.nbytes < 1024
    assert bitmap.java_words().size == 10_000_064 // 64
