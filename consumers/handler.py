"""Phase two for a batch of messages: decode, check, delete idempotently, then ack each,
reconsume it later, or archive it."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import Enum

import structlog

from consumers.received import Acknowledger, ReceivedMessage, not_before_seconds
from consumers.reconsume import Reconsumer
from core.clock import EpochSeconds, WallClock, wall_clock
from core.errors import DecodeError
from core.retry import TransientRetry
from deletion.domain import message
from deletion.domain.decision import Decision, SafetyMargins, Verdict
from deletion.domain.deleter import Candidate, LedgerDeleter
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.offload_port import OffloadStorage
from deletion.domain.ports import LedgerStorage
from deletion.domain.topics import NamespaceName, namespace_of_deletion_topic
from transport.client import java_message_id
from transport.schema import written

log = structlog.get_logger(__name__)


class Outcome(Enum):
    DELETED = "deleted"
    ALREADY_GONE = "already_gone"
    RECONSUMED = "reconsumed"
    ARCHIVED = "archived"


@dataclass(frozen=True)
class HandlingResult:
    outcome: Outcome
    reason: str
    info: PendingDeleteLedgerInfo | None = None


class DeletionHandler:
    def __init__(
        self,
        in_use: InUseLedgersCache,
        storage: LedgerStorage,
        reconsumer: Reconsumer,
        margins: SafetyMargins,
        retry: TransientRetry | None = None,
        clock: WallClock = wall_clock,
        offload: OffloadStorage | None = None,
    ) -> None:
        self.in_use = in_use
        self._deleter = LedgerDeleter(
            in_use, storage, retry or TransientRetry(), offload, margins, clock
        )
        self._reconsumer = reconsumer
        self._margins = margins

    def due(self, received: ReceivedMessage) -> EpochSeconds:
        """When the message may be acted on, by the configured margins."""
        return not_before_seconds(received, self._margins.send_delay, self._margins.clock_skew)

    def handle(self, consumer: Acknowledger, received: ReceivedMessage) -> HandlingResult:
        """Act on a message that is due. Raises only if the retry or archive send failed,
        in which case nothing was acked and the message will be delivered again."""
        (result,) = self.handle_batch([(consumer, received)])
        if isinstance(result, Exception):
            raise result
        return result

    def handle_batch(
        self, batch: Sequence[tuple[Acknowledger, ReceivedMessage]]
    ) -> list[HandlingResult | Exception]:
        """Act on messages that are due, checking and deleting them as one batch. A message
        whose retry or archive send failed gets its error instead: it was not acked."""
        arrived = [namespace_of_deletion_topic(received.topic_name()) for _, received in batch]
        infos = [_decoded(received) for _, received in batch]
        candidates = [
            Candidate(info, namespace, self.due(received))
            for (_, received), namespace, info in zip(batch, arrived, infos, strict=True)
            if isinstance(info, PendingDeleteLedgerInfo)
        ]
        decisions = iter(self._deleter.decide(candidates))
        results: list[HandlingResult | Exception] = []
        for (consumer, received), namespace, info in zip(batch, arrived, infos, strict=True):
            with _logging_context(received, namespace, info):
                try:
                    if isinstance(info, DecodeError):
                        reason = f"undecodable message: {info}"
                        results.append(self._archive(consumer, received, namespace, None, reason))
                    else:
                        decision = next(decisions)
                        results.append(self._act(consumer, received, namespace, info, decision))
                except Exception as exc:  # a failed retry or archive send: nothing was acked
                    log.warning("handing back for redelivery", error=str(exc))
                    results.append(exc)
        return results

    def hand_back(
        self, consumer: Acknowledger, received: ReceivedMessage, reason: str
    ) -> str | None:
        """Redeliver a message that could not be handled; archive it instead once it has been
        redelivered too often (see Reconsumer.hand_back), and then say why."""
        namespace = namespace_of_deletion_topic(received.topic_name())
        return self._reconsumer.hand_back(consumer, received, namespace, reason)

    def decide(
        self,
        info: PendingDeleteLedgerInfo,
        namespace: NamespaceName,
        not_before: EpochSeconds,
        dry_run: bool = False,
    ) -> Decision:
        """Check, and delete if safe (unless `dry_run`); the verdict says what happened."""
        (decision,) = self._deleter.decide([Candidate(info, namespace, not_before)], dry_run)
        return decision

    def _act(
        self,
        consumer: Acknowledger,
        received: ReceivedMessage,
        namespace: NamespaceName,
        info: PendingDeleteLedgerInfo,
        decision: Decision,
    ) -> HandlingResult:
        if decision.verdict is Verdict.RECONSUME:
            archived = self._reconsumer.reconsume_later(
                consumer, received, namespace, decision.reason
            )
            if archived is not None:
                return _done(HandlingResult(Outcome.ARCHIVED, archived, info))
            return _done(HandlingResult(Outcome.RECONSUMED, decision.reason, info))
        if decision.verdict is Verdict.ARCHIVE:
            return self._archive(consumer, received, namespace, info, decision.reason)
        consumer.acknowledge(received)
        gone = decision.verdict is Verdict.ALREADY_GONE
        return _done(
            HandlingResult(Outcome.ALREADY_GONE if gone else Outcome.DELETED, decision.reason, info)
        )

    def _archive(
        self,
        consumer: Acknowledger,
        received: ReceivedMessage,
        namespace: NamespaceName,
        info: PendingDeleteLedgerInfo | None,
        reason: str,
    ) -> HandlingResult:
        self._reconsumer.archive(consumer, received, namespace, reason)
        return _done(HandlingResult(Outcome.ARCHIVED, reason, info))


def _decoded(received: ReceivedMessage) -> PendingDeleteLedgerInfo | DecodeError:
    try:
        return message.decode(*written(received))
    except DecodeError as exc:
        return exc


def _logging_context(
    received: ReceivedMessage, namespace: NamespaceName, info: PendingDeleteLedgerInfo | DecodeError
) -> AbstractContextManager[None]:
    """What every log line about this message carries."""
    fields: dict[str, object] = {
        "message_id": java_message_id(received.message_id()),
        "namespace": str(namespace),
        "deletion_topic": received.topic_name(),
    }
    if isinstance(info, PendingDeleteLedgerInfo):
        fields.update(
            ledger_id=info.ledger_id,
            topic=str(info.topic_name),
            component=info.ledger_component.value,
            ledger_type=info.ledger_type.value,
        )
    return structlog.contextvars.bound_contextvars(**fields)


def _done(result: HandlingResult) -> HandlingResult:
    log.info(result.outcome.value, reason=result.reason)
    return result
