"""Phase one: a pending deletion is persisted on the namespace's deletion topic, delayed,
before the caller changes metadata. A send that fails means the deletion did not happen.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import structlog

from core.errors import EnqueueError, JanitorError
from deletion.domain import message
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.message_properties import DELAY_TIME
from deletion.domain.namespaces import NamespaceRegistry
from transport.producer_pool import ProducerPool

T = TypeVar("T")
log = structlog.get_logger(__name__)


class PhaseOne:
    def __init__(
        self,
        pool: ProducerPool,
        registry: NamespaceRegistry,
        send_delay_seconds: float,
        timeout_seconds: float = 30.0,
    ) -> None:
        self._pool = pool
        self._registry = registry
        self._delay = send_delay_seconds
        self._timeout = timeout_seconds

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

    def enqueue(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Any]:
        """Send all and wait; raise EnqueueError unless every send was acknowledged."""
        futures = [self.enqueue_async(info) for info in infos]
        done, pending = concurrent.futures.wait(futures, timeout=self._timeout)
        failures = [
            f"{info.describe()}: {future.exception()}"
            for info, future in zip(infos, futures, strict=True)
            if future in done and future.exception() is not None
        ]
        if pending:
            failures.append(f"{len(pending)} sends not acknowledged within {self._timeout}s")
        if failures:
            raise EnqueueError(
                "phase one failed; metadata must not change:\n" + "\n".join(failures)
            )
        ids = [future.result() for future in futures]
        for info, message_id in zip(infos, ids, strict=True):
            log.info("enqueued", ledger=info.describe(), message_id=str(message_id))
        return ids

    def enqueue_then_commit(
        self, infos: Sequence[PendingDeleteLedgerInfo], commit: Callable[[], T]
    ) -> T:
        """The two-phase contract: `commit` (the metadata change) runs only after every send
        is acknowledged. If a send fails, EnqueueError is raised and `commit` never runs."""
        self.enqueue(infos)
        return commit()
