"""The phase-two worker: a Shared subscription per namespace; due messages are queued, and
a fixed set of handler threads each takes what is waiting (up to a batch) and handles it
as one batch: under load, batches fill up; when idle, a message is handled on its own."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pulsar
import structlog

from consumers.early import EarlyDeliveryGate
from consumers.handler import DeletionHandler
from consumers.observer import Observer, Observers, WorkerStats
from consumers.received import Arrival
from core.errors import JanitorError
from deletion.domain.topics import SUBSCRIPTION, NamespaceName
from transport.schema import subscribe

log = structlog.get_logger(__name__)
# How often idle threads look up from their queue to see whether the worker is stopping.
POLL_SECONDS = 0.2


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
        observers: Iterable[Observer] = (),
    ) -> None:
        self._client = client
        self._handler = handler
        self._namespaces = namespaces
        self._settings = settings
        self._clock = clock
        self.stats = WorkerStats()
        self._observer = Observers([self.stats, *observers])
        self._consumers: dict[NamespaceName, Any] = {}
        self._gate: EarlyDeliveryGate[Arrival] = EarlyDeliveryGate(settings.max_held_early)
        # Bounded: a full queue blocks the listener, and so the broker's deliveries.
        self._due: queue.Queue[Arrival] = queue.Queue(settings.parallelism * settings.batch_size)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

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
        arrival = self._handler.arrival(consumer, received)
        self._observer.on_received(arrival.namespace)
        if arrival.due > self._clock():
            self._observer.on_held_early(arrival.namespace)
            if not self._gate.hold(arrival.due, arrival):
                self._hand_back(arrival)
            return
        self._dispatch(arrival)

    def _dispatch(self, arrival: Arrival) -> None:
        while not self._stopping.is_set():  # once stopping, it is left unacked
            try:
                self._due.put(arrival, timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _handle_batches(self) -> None:
        while not self._stopping.is_set():
            batch = self._next_batch()
            if batch:
                self._process(batch)

    def _next_batch(self) -> list[Arrival]:
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

    def _process(self, batch: Sequence[Arrival]) -> None:
        started = time.monotonic()
        try:
            results = self._handler.handle_batch(batch)
        except Exception:  # a bug, not an outcome: nothing was acked, so all go back
            log.exception("handling a batch failed; handing it back", size=len(batch))
            for arrival in batch:
                self._hand_back(arrival, "handling the batch failed")
            return
        seconds = time.monotonic() - started
        for arrival, result in zip(batch, results, strict=True):
            if isinstance(result, Exception):
                self._hand_back(arrival, str(result))
            else:
                self._observer.on_handled(arrival.namespace, result, seconds)

    def _hand_back(self, arrival: Arrival, failure: str | None = None) -> None:
        """Redeliver later. A message whose handling failed goes to the archive instead once
        redelivered too often; one refused for want of room (no `failure`) never does."""
        archived = False
        try:
            if failure is None:
                arrival.consumer.negative_acknowledge(arrival.message)
            else:
                archived = self._handler.hand_back(arrival, failure) is not None
        except pulsar.PulsarException as exc:
            log.warning("negative ack failed; redelivered on reconnect", error=str(exc))
        self._observer.on_handed_back(arrival.namespace, archived)

    def _release_due(self) -> None:
        while not self._stopping.is_set():
            self._gate.wait_next(self._clock, max_wait=0.5)
            for arrival in self._gate.pop_due(self._clock()):
                self._dispatch(arrival)

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
