"""The archive (dead-letter) topic, for admins: list what is there (`archive_listing`) and
drain it on demand.

Both go through one Shared subscription on the archive topic. Listing receives without
acking, so everything is redelivered when it closes; a drain acks only what it settled.
Two drains at once split the messages between them, as any Shared subscription does, so
none is processed twice; an interrupted drain leaves its unsettled messages unacked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pulsar

from consumers.handler import DeletionHandler
from consumers.observer import Observer
from core.clock import EpochSeconds
from core.errors import DecodeError
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.decision import Decision, Verdict
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome, Result
from deletion.domain.ports import MetadataStore, PendingDeletions
from deletion.domain.topics import ARCHIVE_SUBSCRIPTION, ARCHIVE_TOPIC, NamespaceName, TopicName
from transport.client import java_message_id
from transport.producer_pool import ProducerPool
from transport.schema import subscribe, written


@dataclass(frozen=True)
class ArchivedMessage:
    namespace: NamespaceName
    message_id: str
    reason: str
    attempts: int
    drains: int
    first_try_ms: int | None
    last_try_ms: int | None
    info: PendingDeleteLedgerInfo | None  # None: the payload does not decode
    raw: Any = field(repr=False, compare=False)

    @classmethod
    def of(cls, namespace: NamespaceName, received: Any) -> ArchivedMessage:
        properties = received.properties()
        try:
            info: PendingDeleteLedgerInfo | None = message.decode(*written(received))
        except DecodeError:
            info = None
        return cls(
            namespace=namespace,
            message_id=java_message_id(received.message_id()),
            reason=properties.get(props.ARCHIVE_REASON, "(no reason recorded)"),
            attempts=props.reconsume_times(properties),
            drains=props.int_property(properties, props.DRAIN_ATTEMPTS) or 0,
            first_try_ms=props.int_property(properties, props.FIRST_ATTEMPT_TIME),
            last_try_ms=props.int_property(properties, props.ARCHIVE_TIME),
            info=info,
            raw=received,
        )

    def as_json(self) -> dict[str, Any]:
        info = self.info
        return {
            "namespace": str(self.namespace),
            "message_id": self.message_id,
            "reason": self.reason,
            "attempts": self.attempts,
            "drains": self.drains,
            "first_try_ms": self.first_try_ms,
            "last_try_ms": self.last_try_ms,
            "topic": str(info.topic_name) if info else None,
            "ledger_id": info.ledger_id if info else None,
            "component": info.ledger_component.value if info else None,
            "ledger_type": info.ledger_type.value if info else None,
        }


@dataclass(frozen=True)
class DrainFilter:
    reason: str | None = None  # a substring of the archive reason
    component: str | None = None
    limit: int | None = None

    def matches(self, archived: ArchivedMessage) -> bool:
        if self.reason and self.reason.lower() not in archived.reason.lower():
            return False
        component = archived.info.ledger_component.value if archived.info else None
        return not self.component or component == self.component.upper()


@contextmanager
def archive_consumer(client: pulsar.Client, namespace: NamespaceName) -> Iterator[Any]:
    consumer = subscribe(
        client,
        namespace.archive_topic,
        ARCHIVE_SUBSCRIPTION,
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    try:
        yield consumer
    finally:
        consumer.close()


def receive_all(consumer: Any, wait_seconds: float, limit: int | None = None) -> Iterator[Any]:
    """Messages until none arrives within `wait_seconds` (or `limit` were seen)."""
    seen = 0
    while limit is None or seen < limit:
        try:
            yield consumer.receive(int(wait_seconds * 1000))
        except pulsar.Timeout:
            return
        seen += 1


def discover_archive_namespaces(store: MetadataStore) -> list[NamespaceName]:
    """Namespaces whose `/managed-ledgers/<tenant>/<ns>/persistent` holds an archive topic:
    found even when their deletion topic is gone (a broker deletes inactive topics)."""
    found = []
    for tenant in store.children("/managed-ledgers"):
        for namespace in store.children(f"/managed-ledgers/{tenant}"):
            name = NamespaceName(tenant, namespace)
            topics = store.children(f"/managed-ledgers/{tenant}/{namespace}/persistent")
            if any(TopicName(name, t).base.local_name == ARCHIVE_TOPIC for t in topics):
                found.append(name)
    return found


class ArchiveDrain:
    """Re-checks archived messages now: delete if safe, requeue if it may become safe, or
    archive again with the new reason if it is known not to be (referenced, not theirs)."""

    def __init__(
        self,
        client: pulsar.Client,
        handler: DeletionHandler,
        phase_one: PendingDeletions,
        pool: ProducerPool,
        clock: Callable[[], float] = time.time,
        observer: Observer | None = None,
    ) -> None:
        self._client, self._handler = client, handler
        self._phase_one, self._pool, self._clock = phase_one, pool, clock
        self._observer = observer or Observer()

    def drain(
        self,
        namespace: NamespaceName,
        only: DrainFilter,
        dry_run: bool,
        wait_seconds: float = 2.0,
        progress: Callable[[ArchivedMessage, Outcome, str], None] | None = None,
    ) -> list[tuple[ArchivedMessage, Outcome, str]]:
        started_ms = int(self._clock() * 1000)
        settled: list[tuple[ArchivedMessage, Outcome, str]] = []
        with archive_consumer(self._client, namespace) as consumer:
            for received in receive_all(consumer, wait_seconds):
                if only.limit is not None and len(settled) >= only.limit:
                    break
                archived = ArchivedMessage.of(namespace, received)
                # Messages archived after we started include our own re-archived ones.
                if received.publish_timestamp() > started_ms or not only.matches(archived):
                    continue  # left unacked: redelivered, still archived, once we close
                outcome, reason = self._settle(consumer, archived, dry_run)
                settled.append((archived, outcome, reason))
                self._observer.on_drained(namespace, outcome)
                if progress is not None:
                    progress(archived, outcome, reason)
        return settled

    def _settle(
        self, consumer: Any, archived: ArchivedMessage, dry_run: bool
    ) -> tuple[Outcome, str]:
        if archived.info is None:
            ruling: Decision | Result = Decision(Verdict.REFUSED, archived.reason)
        else:
            ruling = self._handler.decide(
                archived.info, archived.namespace, EpochSeconds(self._clock()), dry_run
            )
        if isinstance(ruling, Result):  # deleted or already gone, or would be deleted
            outcome = ruling.outcome
        elif ruling.verdict is Verdict.NOT_YET and not ruling.referenced:
            outcome = Outcome.WOULD_REQUEUE if dry_run else Outcome.REQUEUED
            if not dry_run:
                assert archived.info is not None
                self._phase_one.enqueue([archived.info])  # a fresh message: a fresh count
        else:
            outcome = Outcome.WOULD_REARCHIVE if dry_run else Outcome.REARCHIVED
            if not dry_run:
                self._rearchive(archived, ruling.reason)
        if not dry_run:
            consumer.acknowledge(archived.raw)
        return outcome, ruling.reason

    def _rearchive(self, archived: ArchivedMessage, reason: str) -> None:
        properties = dict(archived.raw.properties())
        properties[props.ARCHIVE_REASON] = reason
        properties[props.ARCHIVE_TIME] = str(int(self._clock() * 1000))
        properties[props.DRAIN_ATTEMPTS] = str(archived.drains + 1)
        key = archived.raw.partition_key() or None
        future = self._pool.send(
            archived.namespace.archive_topic, archived.raw.data(), properties, key
        )
        future.result(timeout=30)
