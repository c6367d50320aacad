"""Prometheus metrics of phase two, on a registry of their own.

Namespace labels are bounded: past `max_namespaces` distinct values they read "other", so
a cluster with thousands of namespaces cannot blow up the time-series count.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from consumers.observer import Observer
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.outcome import Outcome, Result
from deletion.domain.topics import NamespaceName

PREFIX = "ledger_janitor"
OTHER = "other"


class _CacheCollector(Collector):
    def __init__(self) -> None:
        self.caches: list[InUseLedgersCache] = []

    def collect(self) -> Iterator[CounterMetricFamily]:
        for name, doc in (
            ("hits", "In-use look-ups answered from the cache."),
            ("misses", "In-use look-ups the cache could not answer."),
            ("fetches", "In-use ledger sets fetched from metadata."),
        ):
            total = sum(getattr(cache.counters, name) for cache in self.caches)
            yield CounterMetricFamily(f"{PREFIX}_in_use_cache_{name}", doc, value=total)


class WorkerMetrics(Observer):
    """The worker's and the drains' events as Prometheus metrics; the in-use caches' counters
    are read from the caches whoever builds them passes to `watch_cache`."""

    def __init__(self, registry: CollectorRegistry, max_namespaces: int = 100) -> None:
        self.registry = registry
        self._max = max_namespaces
        self._seen: set[str] = set()
        self._labels: dict[NamespaceName, str] = {}
        self._children: dict[tuple[object, ...], Any] = {}
        self._lock = threading.Lock()
        by_ns = ["namespace"]
        self._received = Counter(
            f"{PREFIX}_messages_received", "Pending deletions received.", by_ns, registry=registry
        )
        self._held_early = Counter(
            f"{PREFIX}_early_deliveries_held",
            "Messages delivered before their due time and held back.",
            by_ns,
            registry=registry,
        )
        self._handed_back = Counter(
            f"{PREFIX}_messages_handed_back",
            "Messages negatively acknowledged for redelivery.",
            by_ns,
            registry=registry,
        )
        self._outcomes = Counter(
            f"{PREFIX}_messages_handled",
            "Messages handled, by outcome.",
            [*by_ns, "outcome"],
            registry=registry,
        )
        self._deleted = Counter(
            f"{PREFIX}_ledgers_deleted",
            "Ledgers deleted.",
            [*by_ns, "component", "ledger_type"],
            registry=registry,
        )
        self._latency = Histogram(
            f"{PREFIX}_deletion_seconds",
            "Time to check and delete the batch a deleted ledger was in.",
            ["component", "ledger_type"],
            registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self._drained = Counter(
            f"{PREFIX}_archive_drained",
            "Archived messages settled by drains.",
            [*by_ns, "outcome"],
            registry=registry,
        )
        self._caches = _CacheCollector()
        registry.register(self._caches)

    def _label(self, namespace: NamespaceName) -> str:
        # A namespace's label never changes once given, so it is worked out once.
        label = self._labels.get(namespace)
        if label is None:
            label = str(namespace)
            with self._lock:
                if label in self._seen or len(self._seen) < self._max:
                    self._seen.add(label)
                else:
                    label = OTHER
                self._labels[namespace] = label
        return label

    def _child(self, metric: MetricWrapperBase, *labels: str) -> Any:
        """`metric.labels(*labels)`, remembered: every message counts in a few of them."""
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children.setdefault(key, metric.labels(*labels))
        return child

    def watch_cache(self, cache: InUseLedgersCache) -> None:
        self._caches.caches.append(cache)

    def on_received(self, namespace: NamespaceName, count: int = 1) -> None:
        self._child(self._received, self._label(namespace)).inc(count)

    def on_held_early(self, namespace: NamespaceName) -> None:
        self._child(self._held_early, self._label(namespace)).inc()

    def on_handed_back(self, namespace: NamespaceName, archived: bool) -> None:
        self._child(self._handed_back, self._label(namespace)).inc()

    def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
        label = self._label(namespace)
        self._child(self._outcomes, label, result.outcome.value).inc()
        if result.outcome is Outcome.DELETED and result.info is not None:
            component = result.info.ledger_component.value
            ledger_type = result.info.ledger_type.value
            self._child(self._deleted, label, component, ledger_type).inc()
            self._child(self._latency, component, ledger_type).observe(seconds)

    def on_drained(self, namespace: NamespaceName, outcome: Outcome) -> None:
        self._child(self._drained, self._label(namespace), outcome.value).inc()
