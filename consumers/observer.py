"""What the worker and the archive drain tell whoever watches them (metrics, stats, tests),
as dramatiq's middleware hooks: each hook a no-op unless overridden, so an observer says
only what it cares about, and the worker notifies unconditionally."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from deletion.domain.outcome import Outcome, Result
from deletion.domain.topics import NamespaceName


class Observer:
    """Hooks are called from the worker's threads, concurrently: an observer that keeps
    state guards it."""

    def on_received(self, namespace: NamespaceName, count: int = 1) -> None:
        """`count` messages arrived (told once a received batch)."""

    def on_held_early(self, namespace: NamespaceName) -> None:
        """It arrived before its due time: held back, or handed back if the gate is full."""

    def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
        """It was acted on, in a batch that took `seconds` to check and delete."""

    def on_handled_batch(
        self, handled: Sequence[tuple[NamespaceName, Result]], seconds: float
    ) -> None:
        """A batch's messages acted on (what the worker tells): each told to `on_handled`,
        unless overridden, as an observer that takes a lock does, once a batch."""
        for namespace, result in handled:
            self.on_handled(namespace, result, seconds)

    def on_handed_back(self, namespace: NamespaceName, archived: bool) -> None:
        """It was left for redelivery, or, redelivered too often, `archived` instead."""

    def on_drained(self, namespace: NamespaceName, outcome: Outcome) -> None:
        """An archive drain settled an archived message."""


class Observers(Observer):
    """Several observers as one, notified in order."""

    def __init__(self, observers: Iterable[Observer]) -> None:
        self._observers = tuple(observers)

    def on_received(self, namespace: NamespaceName, count: int = 1) -> None:
        for observer in self._observers:
            observer.on_received(namespace, count)

    def on_held_early(self, namespace: NamespaceName) -> None:
        for observer in self._observers:
            observer.on_held_early(namespace)

    def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
        for observer in self._observers:
            observer.on_handled(namespace, result, seconds)

    def on_handled_batch(
        self, handled: Sequence[tuple[NamespaceName, Result]], seconds: float
    ) -> None:
        for observer in self._observers:
            observer.on_handled_batch(handled, seconds)

    def on_handed_back(self, namespace: NamespaceName, archived: bool) -> None:
        for observer in self._observers:
            observer.on_handed_back(namespace, archived)

    def on_drained(self, namespace: NamespaceName, outcome: Outcome) -> None:
        for observer in self._observers:
            observer.on_drained(namespace, outcome)


class WorkerStats(Observer):
    """The worker's own counts, for its summary when it stops (and for tests to wait on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.received = 0
        self.held_early = 0
        self.handed_back = 0
        self.outcomes: dict[str, int] = {}

    def on_received(self, namespace: NamespaceName, count: int = 1) -> None:
        with self._lock:
            self.received += count

    def on_held_early(self, namespace: NamespaceName) -> None:
        with self._lock:
            self.held_early += 1

    def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
        self._count(result.outcome)

    def on_handled_batch(
        self, handled: Sequence[tuple[NamespaceName, Result]], seconds: float
    ) -> None:
        self._count(*(result.outcome for _, result in handled))

    def on_handed_back(self, namespace: NamespaceName, archived: bool) -> None:
        with self._lock:
            self.handed_back += 1
        if archived:
            self._count(Outcome.ARCHIVED)

    def summary(self) -> dict[str, int]:
        with self._lock:
            return {
                "received": self.received,
                "held_early": self.held_early,
                "handed_back": self.handed_back,
                **self.outcomes,
            }

    def _count(self, *outcomes: Outcome) -> None:
        with self._lock:  # once for a batch's
            for outcome in outcomes:
                self.outcomes[outcome.value] = self.outcomes.get(outcome.value, 0) + 1
