"""A ledger missing from BookKeeper is dangling only if its topic still references it when read
again: a busy broker trims and rolls ledgers over between the audit's scans."""

from __future__ import annotations

from audit.pipeline import still_referenced


def test_a_ledger_its_topic_dropped_after_the_scan_is_not_dangling() -> None:
    now = {"t/n/a": frozenset({7}), "t/n/b": frozenset()}
    dangling = [(7, "t/n/a"), (8, "t/n/b"), (9, "t/n/a")]
    assert still_referenced(dangling, now.__getitem__) == [7]


def test_one_topic_still_referencing_it_keeps_it() -> None:
    now = {"t/n/a": frozenset(), "t/n/b": frozenset({5})}
    assert still_referenced([(5, "t/n/a"), (5, "t/n/b")], now.__getitem__) == [5]


def test_references_from_a_file_cannot_be_read_again_so_all_stay() -> None:
    assert still_referenced([(3, "t/n/a"), (2, None)], None) == [2, 3]


def test_no_topic_or_an_unreadable_one_means_unknown_so_it_stays() -> None:
    def unreadable(topic: str) -> frozenset[int]:
        raise RuntimeError("ZooKeeper lost")

    assert still_referenced([(4, None), (6, "t/n/x")], unreadable) == [4, 6]


def test_each_topic_is_read_once() -> None:
    reads: list[str] = []

    def read(topic: str) -> frozenset[int]:
        reads.append(topic)
        return frozenset({1, 2})

    assert still_referenced([(1, "t/n/a"), (2, "t/n/a"), (3, "t/n/a")], read) == [1, 2]
    assert reads == ["t/n/a"]
