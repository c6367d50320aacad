"""The sidecar's own gauges, read at each scrape from what is running (names: METRICS in the
README), beside prometheus_client's process, platform and garbage-collector collectors."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from consumers.metrics import PREFIX
from consumers.worker import DeletionWorker
from deletion.domain.topics import NamespaceName
from ledger_janitor import __version__

REACHED = (("broker", "broker_connected"), ("metadata store", "metadata_store_reachable"))


class Running(Protocol):
    """What the gauges read: the worker and the reachability checks, once running."""

    def worker(self) -> DeletionWorker | None: ...

    def ready(self) -> tuple[bool, str]: ...

    def reachable(self, what: str) -> bool: ...

    def archive_backlog(self) -> dict[NamespaceName, int] | None: ...


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=value)


def _by_namespace(name: str, doc: str, values: dict[NamespaceName, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=["namespace"])
    for namespace, value in sorted(values.items()):
        family.add_metric([str(namespace)], value)
    return family


class SidecarCollector(Collector):
    def __init__(self, running: Running, clock: Callable[[], float] = time.time) -> None:
        self._running = running
        self._clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        info = GaugeMetricFamily(
            f"{PREFIX}_build_info", "The running version, as a label; always 1.", labels=["version"]
        )
        info.add_metric([__version__], 1)
        yield info
        worker = self._running.worker()
        up = worker is not None and worker.live()[0]
        yield _gauge("up", "1 while the worker runs.", 1 if up else 0)
        ready = self._running.ready()[0]
        yield _gauge("ready", "1 when /ready answers 200.", 1 if ready else 0)
        for what, name in REACHED:
            reached = self._running.reachable(what)
            yield _gauge(name, f"1 while the {what} answers.", 1 if reached else 0)
        if worker is None:
            return
        watched = len(worker.subscribed)
        yield _gauge("watched_namespaces", "Namespaces the worker consumes.", watched)
        counts = worker.held()
        held = {ns: counts.get(ns, 0) for ns in worker.subscribed} | dict(counts)
        yield _by_namespace(
            "messages_held", "Messages received before their due time, held unacked.", held
        )
        yield _gauge(
            "oldest_held_message_age_seconds",
            "Seconds past due of the oldest due message not yet handled; 0 when none.",
            worker.oldest_due_age(self._clock()),
        )
        backlog = self._running.archive_backlog()
        if backlog is not None:
            yield _by_namespace(
                "archive_backlog", "Archived messages not yet drained (admin topic stats).", backlog
            )


def sidecar_registry(running: Running) -> CollectorRegistry:
    """A registry with the process, platform and GC collectors and the sidecar's gauges."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(SidecarCollector(running))
    return registry
