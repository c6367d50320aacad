"""The phase-two worker: a Shared subscription per namespace, each with a thread that
receives a batch at a time (whatever is waiting, up to a batch) and queues what is due as
one batch; a fixed set of handler threads each takes a batch and handles it: under load,
batches fill up; when idle, a message is handled on its own.

Receiving by batch, not by message listener: a listener crosses from the client's own
thread into Python for each message and hands it to a handler thread, and that hand-off,
paid once a message rather than once a batch, cost more than all the rest of receiving,
decoding and acking (a loop doing only those on 20,000 messages: 27,000/s through a
listener and a queue, 47,000/s by batch)."""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import pulsar
import structlog

from consumers.early import EarlyDeliveryGate
from consumers.handler import DeletionHandler
from consumers.log_summary import EVERY_SECONDS, LogSummary
from consumers.observer import Observer, Observers, WorkerStats
from consumers.received import Arrival
from core.errors import JanitorError
from deletion.domain.topics import SUBSCRIPTION, NamespaceName
from transport.schema import subscribe

log = structlog.get_logger(__name__)
# How often idle threads look up from their queue to see whether the worker is stopping; a
# receive returns after this long with what it has, so also how long a lone message waits.
POLL_SECONDS = 0.2
# How long `stop` may take at most: in-flight batches, then closing the subscriptions.
STOP_SECONDS = 6.0
# Of which kept for closing the subscriptions once the in-flight batches are done.
CLOSE_SECONDS = 2.0
REFRESHER = "subscriptions"


@dataclass(frozen=True)
class WorkerSettings:
    parallelism: int
    batch_size: int = 32
    max_held_early: int = 10_000
    refresh_interval_seconds: float = 10.0
    receiver_queue_size: int = 100
    nack_delay_ms: int = 10_000
    summary_seconds: float = EVERY_SECONDS  # how often the INFO `worked` line (log_summary.py)


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
        self.summary = LogSummary()
        self._observer = Observers([self.stats, self.summary, *observers])
        self._consumers: dict[NamespaceName, Any] = {}
        self._refused: dict[NamespaceName, pulsar.PulsarException] = {}
        self._gate: EarlyDeliveryGate[Arrival] = EarlyDeliveryGate(settings.max_held_early)
        # Bounded: a full queue stops the receiving, and so the broker's deliveries.
        self._due: queue.Queue[list[Arrival]] = queue.Queue(settings.parallelism)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._in_flight: dict[int, Sequence[Arrival]] = {}

    def start(self) -> None:
        """Subscribe, then start the threads. Raises what the broker answered when there are
        namespaces to watch and not one could be subscribed: nothing would be worked."""
        self.refresh_subscriptions()
        with self._lock:
            refused, subscribed = list(self._refused.values()), bool(self._consumers)
        if refused and not subscribed:
            raise refused[0]
        for i in range(self._settings.parallelism):
            self._start_thread(self._handle_batches, f"deletion-{i}")
        self._start_thread(self._release_due, "early-gate")
        self._start_thread(self._refresh_loop, REFRESHER)
        self._start_thread(self._summary_loop, "summary")

    def _start_thread(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        with self._lock:
            self._threads.append(thread)

    @property
    def client(self) -> pulsar.Client:
        return self._client

    def live(self) -> tuple[bool, str]:
        with self._lock:
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
        count = len(consumers)
        return True, f"{count} subscription{'' if count == 1 else 's'} connected"

    @property
    def subscribed(self) -> list[NamespaceName]:
        with self._lock:
            return sorted(self._consumers)

    def refresh_subscriptions(self) -> None:
        """Subscribe to every namespace that has a deletion topic and is not yet subscribed.
        Not under the lock: a subscription waits on the broker, and `stop` must not.

        A namespace the broker refuses (it does not exist, its deletion topic holds another
        schema, the credentials do not cover it) is said once, and tried again next time; the
        others are subscribed all the same. One refused namespace kept every namespace after
        it (in name order) from being worked, and at start the whole sidecar."""
        wanted = sorted(set(self._namespaces()))
        with self._lock:  # no longer to watch: no longer refused either
            self._refused = {ns: e for ns, e in self._refused.items() if ns in wanted}
        for namespace in wanted:
            with self._lock:
                if namespace in self._consumers or self._stopping.is_set():
                    continue
            try:
                consumer = self._subscribe(namespace)
            except pulsar.PulsarException as exc:
                self._note_refused(namespace, exc)
                continue
            with self._lock:
                late = self._stopping.is_set()
                if not late:
                    self._consumers[namespace] = consumer
                    self._refused.pop(namespace, None)
            if late:  # stopped meanwhile: nothing was received on it
                _close_all([consumer])
                return
            self._start_thread(partial(self._receive, consumer), f"receive-{namespace}")
            log.info("subscribed", topic=namespace.deletion_topic, subscription=SUBSCRIPTION)

    def _note_refused(self, namespace: NamespaceName, exc: pulsar.PulsarException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        with self._lock:
            before = self._refused.get(namespace)
            said = before is not None and f"{type(before).__name__}: {before}" == error
            self._refused[namespace] = exc
        if not said:
            log.warning(
                "cannot subscribe; the namespace's pending deletions wait (tried again at "
                "each refresh)",
                topic=namespace.deletion_topic,
                error=error,
            )

    @property
    def refused(self) -> dict[NamespaceName, str]:
        """Namespaces to watch that the broker refused at the last try, with why."""
        with self._lock:
            return {ns: f"{type(exc).__name__}: {exc}" for ns, exc in self._refused.items()}

    def _subscribe(self, namespace: NamespaceName) -> Any:
        settings = self._settings
        return subscribe(
            self._client,
            [namespace.deletion_topic, namespace.retry_topic],
            SUBSCRIPTION,
            consumer_type=pulsar.ConsumerType.Shared,
            # A batch is taken from what was prefetched (the client caps it there, and says
            # so on the console): room for one whole batch at least.
            receiver_queue_size=max(settings.receiver_queue_size, settings.batch_size),
            batch_receive_policy=pulsar.ConsumerBatchReceivePolicy(
                settings.batch_size, -1, int(POLL_SECONDS * 1000)
            ),
            negative_ack_redelivery_delay_ms=settings.nack_delay_ms,
            initial_position=pulsar.InitialPosition.Earliest,
        )

    def _refresh_loop(self) -> None:
        """`stop` does not wait for this thread: a refresh it overtook may find the stores
        closed under it (sqlite3.ProgrammingError, a closed kazoo client), which then says
        nothing; before the stop, anything but a store's or broker's refusal is a bug that
        ends the thread (and `live` says so)."""
        while not self._stopping.wait(self._settings.refresh_interval_seconds):
            try:
                self.refresh_subscriptions()
            except (JanitorError, pulsar.PulsarException) as exc:
                if not self._stopping.is_set():
                    log.warning("could not refresh deletion subscriptions", error=str(exc))
            except Exception:
                if self._stopping.is_set():
                    return
                raise

    def _summary_loop(self) -> None:
        while not self._stopping.wait(self._settings.summary_seconds):
            self.summary.say()

    def _receive(self, consumer: Any) -> None:
        """Receive a batch at a time until stopping; what arrives once stopping is left
        unacked, and the broker redelivers it once we close."""
        while not self._stopping.is_set():
            try:
                received = consumer.batch_receive()
            except pulsar.AlreadyClosed:
                return
            except pulsar.PulsarException as exc:
                log.warning("receiving failed; receiving again", error=str(exc))
                self._stopping.wait(POLL_SECONDS)
                continue
            if received and not self._stopping.is_set():
                self._dispatch(self._arrivals_of(consumer, received))

    def _arrivals_of(self, consumer: Any, received: list[Any]) -> list[Arrival]:
        try:
            return self._arrived(consumer, received)
        except Exception:  # a bug, not an outcome: the receiving goes on, the batch goes back
            log.exception("receiving a batch failed; handing it back", size=len(received))
            for message in received:
                consumer.negative_acknowledge(message)
            return []

    def _arrived(self, consumer: Any, received: list[Any]) -> list[Arrival]:
        """What is due now; the rest is held until due, or handed back if the gate is full."""
        arrivals = [self._handler.arrival(consumer, message) for message in received]
        for namespace, count in Counter(arrival.namespace for arrival in arrivals).items():
            self._observer.on_received(namespace, count)
        due = []
        now = self._clock()
        for arrival in arrivals:
            if arrival.due <= now:
                due.append(arrival)
                continue
            self._observer.on_held_early(arrival.namespace)
            if not self._gate.hold(arrival.due, arrival):
                self._hand_back(arrival)
        return due

    def _dispatch(self, batch: list[Arrival]) -> None:
        while batch and not self._stopping.is_set():  # once stopping, it is left unacked
            try:
                self._due.put(batch, timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _handle_batches(self) -> None:
        while not self._stopping.is_set():
            try:
                batch = self._due.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            self._process(batch)

    def held(self) -> Counter[NamespaceName]:
        """Per namespace, the messages received before their due time and held unacked."""
        return Counter(arrival.namespace for _, arrival in self._gate.held())

    def oldest_due_age(self, now: float) -> float:
        """Seconds past due of the oldest message that is due but not yet handled (held,
        queued for a handler or being handled); 0 when there is none."""
        dues = [due for due, _ in self._gate.held() if due <= now]
        with self._due.mutex:
            queued = [list(batch) for batch in self._due.queue]
        with self._lock:
            queued += [list(batch) for batch in self._in_flight.values()]
        dues += [arrival.due for batch in queued for arrival in batch]
        return max(0.0, now - min(dues)) if dues else 0.0

    def _process(self, batch: Sequence[Arrival]) -> None:
        started = time.monotonic()
        key = threading.get_ident()
        with self._lock:
            self._in_flight[key] = batch
        try:
            self._handle(batch, started)
        finally:
            with self._lock:
                self._in_flight.pop(key, None)

    def _handle(self, batch: Sequence[Arrival], started: float) -> None:
        try:
            results = self._handler.handle_batch(batch)
        except Exception:  # a bug, not an outcome: nothing was acked, so all go back
            log.exception("handling a batch failed; handing it back", size=len(batch))
            for arrival in batch:
                self._hand_back(arrival, "handling the batch failed")
            return
        seconds = time.monotonic() - started
        handled = []
        for arrival, result in zip(batch, results, strict=True):
            if isinstance(result, Exception):
                self._hand_back(arrival, str(result))
            else:
                handled.append((arrival.namespace, result))
        self._observer.on_handled_batch(handled, seconds)

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
            due = self._gate.pop_due(self._clock())
            size = self._settings.batch_size
            for start in range(0, len(due), size):
                self._dispatch(due[start : start + size])

    def stop(self, timeout: float = STOP_SECONDS) -> bool:
        """Finish in-flight messages, leave the rest unacked for redelivery, then close;
        within `timeout` seconds in all, whatever does not answer. True if everything
        finished in time. A batch still waiting on its metadata store or broker then is
        abandoned: its messages are not acked, so the broker redelivers them, and handling
        one again is safe (a ledger already gone counts as deleted)."""
        deadline = time.monotonic() + timeout
        self._stopping.set()
        held = self._gate.close()
        with self._lock:  # the refresher handles no message: it is not waited for
            threads = [thread for thread in self._threads if thread.name != REFRESHER]
        for thread in threads:  # receivers return within POLL_SECONDS, before the close
            thread.join(max(0.0, deadline - CLOSE_SECONDS - time.monotonic()))
        stuck = [thread.name for thread in threads if thread.is_alive()]
        with self._lock:
            consumers = list(self._consumers.values())
            self._consumers.clear()
        closed = bounded(partial(_close_all, consumers), deadline - time.monotonic())
        if stuck or not closed:
            log.warning(
                "worker stop bound reached; what was in flight stays unacked and is redelivered",
                bound_seconds=timeout,
                waiting_threads=stuck,
                consumers_closed=closed,
            )
        self.summary.say()  # the last period: what the in-flight batches did included
        log.info("worker stopped", held_early_left_unacked=len(held))
        return not stuck and closed


def _close_all(consumers: Iterable[Any]) -> None:
    for consumer in consumers:
        try:
            consumer.close()
        except pulsar.PulsarException as exc:
            log.warning("closing consumer failed", error=str(exc))


def bounded(action: Callable[[], object], seconds: float) -> bool:
    """Run `action` on a daemon thread for at most `seconds`; True if it returned in time.
    One that does not is left running (a daemon thread does not hold the process up)."""
    thread = threading.Thread(target=action, name="bounded", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    return not thread.is_alive()
