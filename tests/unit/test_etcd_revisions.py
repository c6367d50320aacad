"""The etcd store's creation times: never earlier than the truth, whatever order answers
arrive in and however many there are."""

from __future__ import annotations

from core.clock import EpochSeconds
from deletion.adapters.stores.etcd_revisions import RevisionClock


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> EpochSeconds:
        return EpochSeconds(self.now)


def _header(revision: int, cluster: str = "c1") -> dict[str, str]:
    return {"revision": str(revision), "cluster_id": cluster}


def test_a_revision_dates_from_the_first_answer_that_showed_it() -> None:
    clock = Clock()
    revisions = RevisionClock(clock)
    revisions.observe(_header(10))
    clock.now = 1001.0
    revisions.observe(_header(12))
    clock.now = 1002.0
    revisions.observe(_header(12))
    assert [revisions.time_of(r) for r in (1, 10, 11, 12)] == [
        1_000_000,
        1_000_000,
        1_001_000,
        1_001_000,
    ]


def test_an_answer_arriving_late_cannot_date_newer_revisions_earlier() -> None:
    clock = Clock()
    revisions = RevisionClock(clock)
    clock.now = 1005.0
    revisions.observe(_header(20))  # seen at 1005
    clock.now = 1006.0
    revisions.observe(_header(15))  # an older answer, read later: says nothing new
    assert revisions.time_of(16) == 1_005_000
    clock.now = 1004.0  # a thread whose clock read came first
    revisions.observe(_header(18))
    assert revisions.time_of(18) == 1_004_000
    assert revisions.time_of(19) == 1_005_000


def test_unseen_revisions_are_dated_now() -> None:
    clock = Clock()
    revisions = RevisionClock(clock)
    revisions.observe(_header(5))
    clock.now = 2000.0
    assert revisions.time_of(6) == 2_000_000


def test_another_cluster_starts_over() -> None:
    clock = Clock()
    revisions = RevisionClock(clock)
    revisions.observe(_header(100))
    clock.now = 1500.0
    revisions.observe(_header(3, cluster="rebuilt"))
    assert revisions.time_of(2) == 1_500_000  # not the first cluster's 1000 s


def test_thinning_only_makes_times_later() -> None:
    clock = Clock()
    revisions = RevisionClock(clock, capacity=8)
    exact = {}
    for revision in range(1, 200):
        clock.now += 1
        revisions.observe(_header(revision))
        exact[revision] = int(clock.now * 1000)
    assert len(revisions._revisions) <= 8
    for revision, truth in exact.items():
        assert revisions.time_of(revision) >= truth
    assert revisions.time_of(199) == exact[199]
