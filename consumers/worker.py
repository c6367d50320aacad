"""The phase-two worker: a Shared subscription per namespace; due messages are queued, and
a fixed set of handler threads each takes what is waiting (up to a batch) and handles it
as one batch: under load, batches fill up; when idle, a message is handled on its own."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulsar
import structlog

from consumers.early import EarlyDeliveryGate
from consumers.handler import DeletionHandler, HandlingResult
from consumers.metrics import WorkerMetrics
from core.errors import JanitorError
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, namespace_of_deletion_topic
from transport.schema import subscribe

log = structlog.get_logger(__name__)
# How often idle threads look up from their queue to see whether the worker is stopping.
POLL_SECONDS = 0.2


@dataclass
class WorkerStats:
    received: int = 0
    held_early: int = 0
    handed_back: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def summary(self) -> dict[str, int]:
        return {
            "received": self.received,
            "held_early": self.held_early,
            "handed_back": self.handed_back,
            **self.outcomes,
        }


Due = tuple[Any, Any]  # (consumer, received message)


@dataclass(frozen=True)
class WorkerSettings:
    parallelism: int
    batch_size: int = 32
    max_held_early: int = 10_000
    refresh_interval_seconds: float = 10.0
    receiver_queue_size: int = 100
    nack_delay_ms: int = 10_000


class DeletionWorker:
    def __init__(
        self,
        client: pulsar.Client,
        handler: DeletionHandler,
        namespaces: Callable[[], Iterable[NamespaceName]],
        settings: WorkerSettings,
        clock: Callable[[], float] = time.time,
        on_result: Callable[[HandlingResult], None] | None = None,
        metrics: WorkerMetrics | None = None,
    ) -> None:
        self._client = client
        self._metrics = metrics
        if metrics is not None:
            metrics.watch_cache(handler.in_use)
        self._handler = handler
        self._namespaces = namespaces
        self._settings = settings
        self._clock = clock
        self._on_result = on_result
        self._consumers: dict[NamespaceName, Any] = {}
        self._gate: EarlyDeliveryGate[Due] = EarlyDeliveryGate(settings.max_held_early)
        # Bounded: a full queue blocks the listener, and so the broker's deliveries.
        self._due: queue.Queue[Due] = queue.Queue(settings.parallelism * settings.batch_size)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.stats = WorkerStats()

    def start(self) -> None:
        self.refresh_subscriptions()
        handlers = [
            (self._handle_batches, f"deletion-{i}") for i in range(self._settings.parallelism)
        ]
        for target, name in (
            *handlers,
            (self._release_due, "early-gate"),
            (self._refresh_loop, "subscriptions"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    @property
    def client(self) -> pulsar.Client:
        return self._client

    def live(self) -> tuple[bool, str]:
        alive = all(thread.is_alive() for thread in self._threads)
        if self._stopping.is_set() or not alive:
            return False, "stopping" if self._stopping.is_set() else "a worker thread died"
        return True, f"{len(self._threads)} threads alive"

    def connected(self) -> tuple[bool, str]:
        """Whether every deletion subscription is connected to its broker."""
        with self._lock:
            consumers = dict(self._consumers)
        down = [str(ns) for ns, consumer in consumers.items() if not consumer.is_connected()]
        if down:
            return False, f"disconnected from {', '.join(down)}"
        return True, f"{len(consumers)} subscriptions connected"

    @property
    def subscribed(self) -> list[NamespaceName]:
        with self._lock:
            return sorted(self._consumers)

    def refresh_subscriptions(self) -> None:
        """Subscribe to every namespace that has a deletion topic and is not yet subscribed."""
        for namespace in sorted(set(self._namespaces())):
            with self._lock:
                if namespace in self._consumers or self._stopping.is_set():
                    continue
                self._consumers[namespace] = subscribe(
                    self._client,
                    [namespace.deletion_topic, namespace.retry_topic],
                    SUBSCRIPTION,
                    consumer_type=pulsar.ConsumerType.Shared,
                    message_listener=self._on_message,
                    receiver_queue_size=self._settings.receiver_queue_size,
                    negative_ack_redelivery_delay_ms=self._settings.nack_delay_ms,
                    initial_position=pulsar.InitialPosition.Earliest,
                )
            log.info("subscribed", topic=namespace.deletion_topic, subscription=SUBSCRIPTION)

    def _refresh_loop(self) -> None:
        while not self._stopping.wait(self._settings.refresh_interval_seconds):
            try:
                self.refresh_subscriptions()
            except (JanitorError, pulsar.PulsarException) as exc:
                log.warning("could not refresh deletion subscriptions", error=str(exc))

    def _on_message(self, consumer: Any, received: Any) -> None:
        if self._stopping.is_set():
            return  # left unacked: the broker redelivers it once we close
        with self._lock:
            self.stats.received += 1
        if self._metrics:
            self._metrics.received.labels(self._namespace_label(received)).inc()
        due = self._handler.due(received)
        if due > self._clock():
            with self._lock:
                self.stats.held_early += 1
            if self._metrics:
                self._metrics.held_early.labels(self._namespace_label(received)).inc()
            if not self._gate.hold(due, (consumer, received)):
                self._hand_back(consumer, received)
            return
        self._dispatch(consumer, received)

    def _dispatch(self, consumer: Any, received: Any) -> None:
        while not self._stopping.is_set():  # once stopping, it is left unacked
            try:
                self._due.put((consumer, received), timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _handle_batches(self) -> None:
        while not self._stopping.is_set():
            batch = self._next_batch()
            if batch:
                self._process(batch)

    def _next_batch(self) -> list[Due]:
        """What is waiting, up to a batch; waits a moment for the first only."""
        try:
            batch = [self._due.get(timeout=POLL_SECONDS)]
        except queue.Empty:
            return []
        while len(batch) < self._settings.batch_size:
            try:
                batch.append(self._due.get_nowait())
            except queue.Empty:
                break
        return batch

    def _process(self, batch: Sequence[Due]) -> None:
        started = time.monotonic()
        try:
            results = self._handler.handle_batch(batch)
        except Exception:  # a bug, not an outcome: nothing was acked, so all go back
            log.exception("handling a batch failed; handing it back", size=len(batch))
            for consumer, received in batch:
                self._hand_back(consumer, received, "handling the batch failed")
            return
        seconds = time.monotonic() - started
        for (consumer, received), result in zip(batch, results, strict=True):
            if isinstance(result, Exception):
                self._hand_back(consumer, received, str(result))
                continue
            with self._lock:
                self.stats.count(result.outcome.value)
            if self._metrics:
                namespace = namespace_of_deletion_topic(received.topic_name())
                self._metrics.handled(namespace, result, seconds)
            if self._on_result is not None:
                self._on_result(result)

    def _namespace_label(self, received: Any) -> str:
        assert self._metrics is not None
        return self._metrics.namespace(namespace_of_deletion_topic(received.topic_name()))

    def _hand_back(self, consumer: Any, received: Any, failure: str | None = None) -> None:
        """Redeliver later. A message whose handling failed goes to the archive instead once
        redelivered too often; one refused for want of room (no `failure`) never does."""
        with self._lock:
            self.stats.handed_back += 1
        if self._metrics:
            self._metrics.handed_back.labels(self._namespace_label(received)).inc()
        try:
            if failure is None:
                consumer.negative_acknowledge(received)
            elif self._handler.hand_back(consumer, received, failure) is not None:
                with self._lock:
                    self.stats.count("archived")
        except pulsar.PulsarException as exc:
            log.warning("negative ack failed; redelivered on reconnect", error=str(exc))

    def _release_due(self) -> None:
        while not self._stopping.is_set():
            self._gate.wait_next(self._clock, max_wait=0.5)
            for consumer, received in self._gate.pop_due(self._clock()):
                self._dispatch(consumer, received)

    def stop(self, timeout: float = 30.0) -> None:
        """Finish in-flight messages, leave the rest unacked for redelivery, then close."""
        self._stopping.set()
        held = self._gate.close()
        for thread in self._threads:
            thread.join(timeout)
        with self._lock:
            consumers = list(self._consumers.values())
            self._consumers.clear()
        for consumer in consumers:
            try:
                consumer.close()
            except pulsar.PulsarException as exc:
                log.warning("closing consumer failed", error=str(exc))
        log.info("worker stopped", held_early_left_unacked=len(held))
