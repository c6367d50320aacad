"""Holding messages that arrived before their due time, without acking them."""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class EarlyDeliveryGate(Generic[T]):
    """A bounded min-heap of (due time, item). A held item is unacked, so a crash loses nothing."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._heap: list[tuple[float, int, T]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._closed = False

    def hold(self, due: float, item: T) -> bool:
        """Keep `item` until `due`; False when full (the caller hands it back instead)."""
        with self._changed:
            if self._closed or len(self._heap) >= self._capacity:
                return False
            heapq.heappush(self._heap, (due, next(self._order), item))
            self._changed.notify()
            return True

    def pop_due(self, now: float) -> list[T]:
        with self._changed:
            due: list[T] = []
            while self._heap and self._heap[0][0] <= now:
                due.append(heapq.heappop(self._heap)[2])
            return due

    def wait_next(self, now: Callable[[], float], max_wait: float) -> None:
        """Block until the earliest item is due, something new is held, or `max_wait` passes."""
        with self._changed:
            if self._closed:
                return
            self._changed.wait(self._time_to_next(now(), max_wait))

    def time_to_next(self, now: float, max_wait: float) -> float:
        """How long `wait_next` would wait at `now`: until the earliest item is due, capped."""
        with self._changed:
            return self._time_to_next(now, max_wait)

    def _time_to_next(self, now: float, max_wait: float) -> float:
        if not self._heap:
            return max_wait
        return min(max_wait, max(0.0, self._heap[0][0] - now))

    def held(self) -> list[tuple[float, T]]:
        """What is held now, as (due time, item), earliest first."""
        with self._changed:
            return [(due, item) for due, _, item in sorted(self._heap)]

    def close(self) -> list[T]:
        """Stop holding; return what was held so the caller can leave it unacked."""
        with self._changed:
            self._closed = True
            items = [entry[2] for entry in self._heap]
            self._heap.clear()
            self._changed.notify_all()
            return items

    def __len__(self) -> int:
        with self._changed:
            return len(self._heap)
