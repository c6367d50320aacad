"""InUseLedgersCache with a fake source and a fake clock: one fetch per topic per TTL."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from core.clock import EpochSeconds, MonotonicSeconds
from core.errors import MetadataError
from deletion.domain.in_use import CacheCounters, InUseLedgersCache
from deletion.domain.ports import TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName

NS = NamespaceName("t", "ns")
A = TopicName(NS, "a")
B = TopicName(NS, "b")
TTL = 600.0


class FakeClock:
    """The cache's monotonic clock; the fake source stamps its snapshots with it too."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> MonotonicSeconds:
        return MonotonicSeconds(self.now)


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
        return TopicLedgers(topic, True, frozenset({self.calls[topic]}), EpochSeconds(self.clock()))


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


def test_cached_answers_as_lookup_would_from_the_cache_and_never_fetches(
    cache: InUseLedgersCache, source: FakeSource, clock: FakeClock
) -> None:
    assert cache.cached(A) is None  # nothing cached: lookup would fetch
    first = cache.lookup(A)
    assert cache.cached(A) is first
    assert cache.cached(A, EpochSeconds(first.fetched_at)) is first
    assert cache.cached(A, EpochSeconds(first.fetched_at + 0.001)) is None  # too old for it
    clock.now += TTL + 0.001
    assert cache.cached(A) is None  # expired
    assert source.calls[A] == 1
    assert cache.counters == CacheCounters(hits=2, misses=1, fetches=1)


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


def test_failing_fresh_look_up_keeps_the_cached_snapshot(
    cache: InUseLedgersCache, source: FakeSource, clock: FakeClock
) -> None:
    first = cache.lookup(A)
    source.fail_next = MetadataError("gone")
    with pytest.raises(MetadataError):
        cache.lookup(A, fresh_after=EpochSeconds(clock.now + 1))
    assert cache.lookup(A) is first


def test_a_snapshot_older_than_fresh_after_is_fetched_anew_and_replaces_the_entry(
    cache: InUseLedgersCache, source: FakeSource, clock: FakeClock
) -> None:
    first = cache.lookup(A)
    clock.now += 1
    assert cache.lookup(A, fresh_after=EpochSeconds(clock.now - 1)) is first  # fresh enough
    fresh = cache.lookup(A, fresh_after=EpochSeconds(clock.now))
    assert fresh is not first
    assert fresh.ledger_ids == frozenset({2})
    assert fresh.fetched_at >= clock.now
    assert cache.lookup(A) is fresh
    assert source.calls[A] == 2
    assert cache.counters == CacheCounters(hits=2, misses=2, fetches=2)


def test_a_fresh_snapshot_lives_a_full_ttl_from_its_fetch(
    cache: InUseLedgersCache, source: FakeSource, clock: FakeClock
) -> None:
    cache.lookup(A)
    clock.now += TTL - 1
    fresh = cache.lookup(A, fresh_after=EpochSeconds(clock.now))
    clock.now += TTL - 1
    assert cache.lookup(A) is fresh
    assert source.calls[A] == 2


def test_fresh_after_of_one_topic_keeps_the_others(
    cache: InUseLedgersCache, clock: FakeClock
) -> None:
    a, b = cache.lookup(A), cache.lookup(B)
    clock.now += 1
    assert cache.lookup(A, fresh_after=EpochSeconds(clock.now)) is not a
    assert cache.lookup(B) is b


def test_concurrent_fresh_look_ups_share_one_fetch_made_after_their_due_time(
    clock: FakeClock,
) -> None:
    """A batch of messages for one topic, all due: one fetch serves them all."""
    release = threading.Event()

    class SlowSource(FakeSource):
        def fetch(self, topic: TopicName) -> TopicLedgers:
            release.wait(timeout=30)
            return super().fetch(topic)

    source = SlowSource(clock)
    cache = InUseLedgersCache(source, ttl=TTL, clock=clock)
    results: list[TopicLedgers] = []
    due = EpochSeconds(clock.now)
    threads = [
        threading.Thread(target=lambda: results.append(cache.lookup(A, fresh_after=due)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 8
    assert source.calls[A] == 1
    assert all(result.fetched_at >= due for result in results)


def test_a_slow_fetch_of_one_topic_holds_back_no_other(clock: FakeClock) -> None:
    """Each topic has its own fetch lock: one slow metadata read must not stall them all."""
    a_fetching, b_fetched = threading.Event(), threading.Event()

    class OneSlowTopic(FakeSource):
        def fetch(self, topic: TopicName) -> TopicLedgers:
            if topic == A:
                a_fetching.set()
                # Bounded only so that a shared lock fails the test instead of hanging it.
                if not b_fetched.wait(timeout=10):
                    raise MetadataError("B was held back while A was being fetched")
            found = super().fetch(topic)
            if topic == B:
                b_fetched.set()
            return found

    cache = InUseLedgersCache(OneSlowTopic(clock), ttl=TTL, clock=clock)
    errors: list[BaseException] = []

    def look_up_a() -> None:
        try:
            cache.lookup(A)
        except BaseException as exc:  # reported below, never swallowed
            errors.append(exc)

    slow = threading.Thread(target=look_up_a)
    slow.start()
    assert a_fetching.wait(timeout=30)
    cache.lookup(B)
    slow.join(timeout=60)
    assert not slow.is_alive()
    assert errors == []


def test_a_fresher_look_up_waiting_on_a_fetch_makes_its_own(clock: FakeClock) -> None:
    """B waits on A's fetch of the same topic, but needs a later read than A's: it fetches
    again once A is done, and both finish without error."""
    a_read, b_waiting, release = threading.Event(), threading.Event(), threading.Event()

    class SignallingCounters(CacheCounters):
        def __setattr__(self, name: str, value: int) -> None:
            super().__setattr__(name, value)
            if name == "misses" and value == 2:
                b_waiting.set()

    class FirstFetchHeld(FakeSource):
        def fetch(self, topic: TopicName) -> TopicLedgers:
            read_at = EpochSeconds(self.clock())  # read now, answered later
            if not release.is_set():
                a_read.set()
                release.wait(timeout=30)
            found = super().fetch(topic)
            return TopicLedgers(topic, True, found.ledger_ids, read_at)

    source = FirstFetchHeld(clock)
    cache = InUseLedgersCache(source, ttl=TTL, clock=clock)
    cache.counters = SignallingCounters()
    results: dict[str, TopicLedgers] = {}
    errors: list[BaseException] = []

    def look_up(name: str, fresh_after: EpochSeconds | None) -> None:
        try:
            results[name] = cache.lookup(A, fresh_after)
        except BaseException as exc:  # reported below, never swallowed
            errors.append(exc)

    first = threading.Thread(target=look_up, args=("a", None))
    first.start()
    assert a_read.wait(timeout=30)
    clock.now += 1
    second = threading.Thread(target=look_up, args=("b", EpochSeconds(clock.now)))
    second.start()
    assert b_waiting.wait(timeout=30)
    release.set()
    for thread in (first, second):
        thread.join(timeout=60)
        assert not thread.is_alive()
    assert errors == []
    assert results["b"].fetched_at >= clock.now > results["a"].fetched_at
    assert source.calls[A] == 2


def test_no_fetch_lock_outlives_its_fetch(cache: InUseLedgersCache) -> None:
    """A lock kept per topic ever looked up would grow without bound in a long-lived worker."""
    for topic in (A, B, A):
        cache.lookup(topic)
    assert cache._fetching == {}
