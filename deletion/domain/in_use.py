"""The in-use check behind a TTL cache: one metadata fetch per topic per TTL window."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from cachetools import TTLCache

from core.clock import EpochSeconds, MonotonicClock, monotonic_clock
from deletion.domain.ports import InUseLedgers, TopicLedgers
from deletion.domain.topics import TopicName


@dataclass
class CacheCounters:
    hits: int = 0
    misses: int = 0
    fetches: int = 0


class InUseLedgersCache:
    """Caches `InUseLedgers.fetch` per topic for `ttl` seconds of the monotonic `clock`.

    A look-up may demand a snapshot read no earlier than some wall-clock time: an older
    cached one is then fetched anew. Concurrent look-ups of one topic share a single
    fetch, so a burst of messages for a topic costs one metadata read. A failed fetch is
    not cached.
    """

    def __init__(
        self,
        source: InUseLedgers,
        ttl: float,
        clock: MonotonicClock = monotonic_clock,
        max_topics: int = 100_000,
    ) -> None:
        self._source = source
        self._cache: TTLCache[TopicName, TopicLedgers] = TTLCache(max_topics, ttl, timer=clock)
        self._lock = threading.Lock()
        self._fetching: dict[TopicName, threading.Lock] = {}
        self.counters = CacheCounters()

    @property
    def source(self) -> InUseLedgers:
        return self._source

    def cached(
        self, topic: TopicName, fresh_after: EpochSeconds | None = None
    ) -> TopicLedgers | None:
        """The cached snapshot `lookup` would answer with, or None when it would fetch: a
        look-up that cannot fail, so it needs no retry (and the hot path none of its cost)."""
        with self._lock:
            cached = self._usable(topic, fresh_after)
            if cached is not None:
                self.counters.hits += 1
            return cached

    def count_hits(self, count: int) -> None:
        """Count look-ups a caller answered with a snapshot this cache gave it (a batch's)."""
        if count:
            with self._lock:
                self.counters.hits += count

    def lookup(self, topic: TopicName, fresh_after: EpochSeconds | None = None) -> TopicLedgers:
        """The topic's snapshot; with `fresh_after`, one read no earlier than that."""
        with self._lock:
            cached = self._usable(topic, fresh_after)
            if cached is not None:
                self.counters.hits += 1
                return cached
            self.counters.misses += 1
            fetch_lock = self._fetching.setdefault(topic, threading.Lock())
        with fetch_lock:
            with self._lock:
                cached = self._usable(topic, fresh_after)
            if cached is not None:  # a fetch that just finished serves this look-up too
                return cached
            fresh = self._source.fetch(topic)
            with self._lock:
                self.counters.fetches += 1
                self._cache[topic] = fresh
                self._fetching.pop(topic, None)
            return fresh

    def _usable(self, topic: TopicName, fresh_after: EpochSeconds | None) -> TopicLedgers | None:
        cached = self._cache.get(topic)
        if cached is None or (fresh_after is not None and cached.fetched_at < fresh_after):
            return None
        return cached
