"""The in-use check behind a TTL cache: one metadata fetch per topic per TTL window."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from cachetools import TTLCache

from .ports import InUseLedgers, TopicLedgers
from .topics import TopicName


@dataclass
class CacheCounters:
    hits: int = 0
    misses: int = 0
    fetches: int = 0
    invalidations: int = 0


class InUseLedgersCache:
    """Caches `InUseLedgers.fetch` per topic for `ttl` seconds of `clock`.

    Concurrent misses on one topic share a single fetch, so a burst of messages for a
    topic costs one metadata read. A failed fetch is not cached.
    """

    def __init__(
        self,
        source: InUseLedgers,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
        max_topics: int = 100_000,
    ) -> None:
        self._source = source
        self._cache: TTLCache[TopicName, TopicLedgers] = TTLCache(max_topics, ttl, timer=clock)
        self._lock = threading.Lock()
        self._fetching: dict[TopicName, threading.Lock] = {}
        self.counters = CacheCounters()

    def lookup(self, topic: TopicName) -> TopicLedgers:
        with self._lock:
            cached = self._cache.get(topic)
            if cached is not None:
                self.counters.hits += 1
                return cached
            self.counters.misses += 1
            fetch_lock = self._fetching.setdefault(topic, threading.Lock())
        with fetch_lock:
            with self._lock:
                cached = self._cache.get(topic)
            if cached is not None:
                return cached
            fresh = self._source.fetch(topic)
            with self._lock:
                self.counters.fetches += 1
                self._cache[topic] = fresh
                self._fetching.pop(topic, None)
            return fresh

    def fetch_fresh(self, topic: TopicName) -> TopicLedgers:
        """Bypass the cache, and keep the fresh snapshot for the next look-ups."""
        fresh = self._source.fetch(topic)
        with self._lock:
            self.counters.fetches += 1
            self._cache[topic] = fresh
        return fresh

    def invalidate_if_older(self, topic: TopicName, than: float) -> None:
        """Drop the snapshot if it was taken before `than` (clock seconds)."""
        with self._lock:
            cached = self._cache.get(topic)
            if cached is not None and cached.fetched_at < than:
                del self._cache[topic]
                self.counters.invalidations += 1
