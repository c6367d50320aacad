"""InUseLedgersCache with a fake source and a fake clock: one fetch per topic per TTL."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from deletion.in_use import CacheCounters, InUseLedgersCache
from deletion.ports import TopicLedgers
from deletion.topics import NamespaceName, TopicName
from ledger_janitor.errors import MetadataError

NS = NamespaceName("t", "ns")
A = TopicName(NS, "a")
B = TopicName(NS, "b")
TTL = 600.0


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeSource:
    """Returns a new snapshot per call (ids {call number}); can be told to fail once."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: Counter[TopicName] = Counter()
        self.fail_next: Exception | None = None

    def fetch(self, topic: TopicName) -> TopicLedgers:
        self.calls[topic] += 1
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        return TopicLedgers(topic, True, frozenset({self.calls[topic]}), self.clock())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def source(clock: FakeClock) -> FakeSource:
    return FakeSource(clock)


@pytest.fixture
def cache(source: FakeSource, clock: FakeClock) -> InUseLedgersCache:
    return InUseLedgersCache(source, ttl=TTL, clock=clock)


def test_one_fetch_per_topic_within_the_ttl(
    cache: InUseLedgersCache, source: FakeSource, clock: FakeClock
) -> None:
    first = cache.lookup(A)
    clock.now += TTL - 0.001
    for _ in range(5):
        assert cache.lookup(A) is first
    assert source.calls[A] == 1
    assert cache.counters == CacheCounters(hits=5, misses=1, fetches=1)


def test_topics_are_cached_separately(cache: InUseLedgersCache, source: FakeSource) -> None:
    a, b = cache.lookup(A), cache.lookup(B)
    assert (a.topic, b.topic) == (A, B)
    assert cache.lookup(A) is a
    assert cache.lookup(B) is b
    assert source.calls == Counter({A: 1, B: 1})


def test_expiry_refetches(cache: InUseLedgersCache, source: FakeSource, clock: FakeClock) -> None:
    first = cache.lookup(A)
    clock.now += TTL + 0.001
    second = cache.lookup(A)
    assert second is not first
    assert second.ledger_ids == frozenset({2})
    assert second.fetched_at == clock.now
    assert source.calls[A] == 2
    assert cache.lookup(A) is second
    assert cache.counters == CacheCounters(hits=1, misses=2, fetches=2)


def test_concurrent_lookups_of_one_topic_share_one_fetch(clock: FakeClock) -> None:
    threads = 8
    all_missed = threading.Event()

    class SignallingCounters(CacheCounters):
        """Tells the blocked fetch once every thread has missed and waits on the fetch."""

        def __setattr__(self, name: str, value: int) -> None:
            super().__setattr__(name, value)
            if name == "misses" and value >= threads:
                all_missed.set()

    class BlockingSource(FakeSource):
        def fetch(self, topic: TopicName) -> TopicLedgers:
            # Held until all threads have missed: none of them can find a cached snapshot.
            all_missed.wait(timeout=30)
            return super().fetch(topic)

    source = BlockingSource(clock)
    cache = InUseLedgersCache(source, ttl=TTL, clock=clock)
    cache.counters = SignallingCounters()
    results: list[TopicLedgers] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def look() -> None:
        try:
            found = cache.lookup(A)
        except BaseException as exc:  # reported below, never swallowed
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(found)

    workers = [threading.Thread(target=look) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not any(worker.is_alive() for worker in workers)
    assert errors == []
    assert all_missed.is_set()
    assert source.calls[A] == 1
    assert len(results) == threads
    assert all(result is results[0] for result in results)
    assert cache.counters.misses == threads
    assert cache.counters.fetches == 1


def test_failing_fetch_propagates_and_is_not_cached(
    cache: InUseLedgersCache, source: FakeSource
) -> None:
    source.fail_next = MetadataError("ZooKeeper said no")
    with pytest.raises(MetadataError, match="said no"):
        cache.lookup(A)
    found = cache.lookup(A)
    assert found.ledger_ids == frozenset({2})
    assert source.calls[A] == 2
    assert cache.lookup(A) is found
    assert cache.counters.fetches == 1
    assert cache.counters.hits == 1


def test_failing_fetch_fresh_keeps_the_cached_snapshot(
    cache: InUseLedgersCache, source: FakeSource
) -> None:
    first = cache.lookup(A)
    source.fail_next = MetadataError("gone")
    with pytest.raises(MetadataError):
        cache.fetch_fresh(A)
    assert cache.lookup(A) is first


def test_fetch_fresh_bypasses_and_replaces_the_entry(
    cache: InUseLedgersCache, source: FakeSource, clock: FakeClock
) -> None:
    first = cache.lookup(A)
    clock.now += 1
    fresh = cache.fetch_fresh(A)
    assert fresh is not first
    assert fresh.ledger_ids == frozenset({2})
    assert cache.lookup(A) is fresh
    assert source.calls[A] == 2
    assert cache.counters == CacheCounters(hits=1, misses=1, fetches=2)


def test_fetch_fresh_entry_lives_a_full_ttl_from_its_fetch(
    cache: InUseLedgersCache, source: FakeSource, clock: FakeClock
) -> None:
    cache.lookup(A)
    clock.now += TTL - 1
    fresh = cache.fetch_fresh(A)
    clock.now += TTL - 1
    assert cache.lookup(A) is fresh
    assert source.calls[A] == 2


def test_invalidate_if_older_drops_only_older_snapshots(
    cache: InUseLedgersCache, clock: FakeClock
) -> None:
    taken_at = clock.now
    first = cache.lookup(A)
    cache.invalidate_if_older(A, than=taken_at - 1)
    cache.invalidate_if_older(A, than=taken_at)  # not older than itself
    assert cache.lookup(A) is first
    assert cache.counters.invalidations == 0

    cache.invalidate_if_older(A, than=taken_at + 0.5)
    assert cache.counters.invalidations == 1
    second = cache.lookup(A)
    assert second is not first
    assert cache.counters.fetches == 2


def test_invalidate_if_older_of_an_unknown_topic_is_a_no_op(cache: InUseLedgersCache) -> None:
    cache.invalidate_if_older(B, than=1e12)
    assert cache.counters == CacheCounters()


def test_invalidate_one_topic_keeps_the_others(cache: InUseLedgersCache, clock: FakeClock) -> None:
    a, b = cache.lookup(A), cache.lookup(B)
    cache.invalidate_if_older(A, than=clock.now + 1)
    assert cache.lookup(B) is b
    assert cache.lookup(A) is not a
