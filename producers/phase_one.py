"""Phase one: a pending deletion is persisted on the namespace's deletion topic, delayed,
before the caller changes metadata. A send that fails means the deletion did not happen.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from core.errors import EnqueueError, JanitorError
from deletion.domain import message
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.message_properties import DELAY_TIME
from deletion.domain.namespaces import NamespaceRegistry
from deletion.domain.topics import NamespaceName
from transport.producer_pool import ProducerPool

T = TypeVar("T")
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Sent:
    """One pending deletion's fate: persisted as `message_id`, or not (`error` says why)."""

    info: PendingDeleteLedgerInfo
    message_id: Any = None
    error: str | None = None

    @property
    def enqueued(self) -> bool:
        return self.error is None


class PhaseOne:
    def __init__(
        self,
        pool: ProducerPool,
        registry: NamespaceRegistry,
        send_delay_seconds: float,
        timeout_seconds: float = 30.0,
        prepare_archive: Callable[[NamespaceName], None] | None = None,
    ) -> None:
        """`prepare_archive(namespace)` makes the namespace's archive subscription (as the
        first send to the namespace does, with the others)."""
        self._pool = pool
        self._registry = registry
        self._delay = send_delay_seconds
        self._timeout = timeout_seconds
        self._prepare_archive = prepare_archive

    def prepared(self, namespaces: Iterable[NamespaceName]) -> list[NamespaceName]:
        """`namespaces`, each with its archive subscription made; a failed set-up is logged
        (and tried again next time), the namespace still returned.

        The worker's process calls this before it subscribes: the archive's subscription is
        the one it does not make by subscribing, and it must exist before anything is
        archived. On the embedded broker it also keeps the worker clear of `enqueue`:
        pulsar-lite keys a Shared subscription's consumers by the client's consumer id, which
        every client counts from 0, and a phase-one process's set-up takes its first ids on
        the deletion topic (then the retry and archive topics); the worker, having used its
        first ids on the archive, takes higher ones there. No "Consumer 0 already exists"."""
        listed = sorted(set(namespaces))
        if self._prepare_archive is None:
            return listed
        for namespace in listed:
            try:
                self._prepare_archive(namespace)
            except JanitorError as exc:
                log.warning("archive set-up failed", namespace=str(namespace), error=str(exc))
        return listed

    def enqueue_async(self, info: PendingDeleteLedgerInfo) -> Future[Any]:
        """Send one pending deletion; the future holds the message id once it is persisted."""
        namespace = info.topic_name.namespace
        try:
            self._registry.register(namespace)
        except JanitorError as exc:
            failed: Future[Any] = Future()
            failed.set_exception(EnqueueError(f"cannot register namespace {namespace}: {exc}"))
            return failed
        # The consumer enforces the delay itself from this property, whatever the broker does.
        properties = {DELAY_TIME: str(int(self._delay * 1000))}
        return self._pool.send(
            namespace.deletion_topic,
            message.encode(info),
            properties,
            key=str(info.ledger_id),
            delay_seconds=self._delay,
        )

    def enqueue_each(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Sent]:
        """Send all and wait; each one's fate, in order. A send not acknowledged in time is
        not enqueued as far as the caller knows (it may still be persisted: a duplicate
        pending deletion is harmless).

        A namespace whose set-up or producer failed is not tried again within the call: its
        other ledgers share that failure. Each try costs up to a connection or operation
        time-out when the broker does not answer (10 s to 30 s), so a batch of hundreds
        would otherwise take hours to say that nothing was enqueued."""
        futures: list[Future[Any]] = []
        refused: dict[NamespaceName, Future[Any]] = {}
        for info in infos:
            namespace = info.topic_name.namespace
            future = refused.get(namespace) or self.enqueue_async(info)
            if self._unprepared(future, namespace):
                refused[namespace] = future
            futures.append(future)
        done, _ = concurrent.futures.wait(futures, timeout=self._timeout)
        sent = []
        for info, future in zip(infos, futures, strict=True):
            if future not in done:
                error = f"not acknowledged within {self._timeout:g} s"
                sent.append(Sent(info, error=error))
            elif future.exception() is not None:
                sent.append(Sent(info, error=str(future.exception())))
            else:
                sent.append(Sent(info, message_id=future.result()))
                log.info("enqueued", ledger=info.describe(), message_id=str(future.result()))
        return sent

    def _unprepared(self, future: Future[Any], namespace: NamespaceName) -> bool:
        """Whether the send failed before it reached a producer: the namespace's
        registration, topic set-up or producer failed, not the message."""
        failed = future.done() and future.exception() is not None
        return failed and namespace.deletion_topic not in self._pool

    def enqueue(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Any]:
        """Send all and wait; raise EnqueueError unless every send was acknowledged."""
        sent = self.enqueue_each(infos)
        failures = [f"{s.info.describe()}: {s.error}" for s in sent if not s.enqueued]
        if failures:
            raise EnqueueError(
                "phase one failed; metadata must not change:\n" + "\n".join(failures)
            )
        return [s.message_id for s in sent]

    def enqueue_then_commit(
        self, infos: Sequence[PendingDeleteLedgerInfo], commit: Callable[[], T]
    ) -> T:
        """The two-phase contract: `commit` (the metadata change) runs only after every send
        is acknowledged. If a send fails, EnqueueError is raised and `commit` never runs."""
        self.enqueue(infos)
        return commit()
