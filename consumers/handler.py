"""Phase two for one message: decode, check, delete idempotently, ack, or hand it back."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import structlog

from deletion import message
from deletion.decision import Decision, Verdict, check_namespace, check_ownership, decide_in_use
from deletion.in_use import InUseLedgersCache
from deletion.message import LedgerType, PendingDeleteLedgerInfo
from deletion.offload.base import OffloadStorage, UnsupportedOffloadDriverError
from deletion.offload.context import IncompleteOffloadError
from deletion.ports import LedgerRecord, LedgerStorage, TopicLedgers
from deletion.topics import NamespaceName, namespace_of_deletion_topic
from deletion.transient import TransientRetry
from ledger_janitor.errors import DecodeError, JanitorError, VersionConflictError

from .received import Acknowledger, ReceivedMessage, not_before_seconds
from .reconsume import Reconsumer

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
        send_delay_seconds: float,
        retry: TransientRetry | None = None,
        clock: Callable[[], float] = time.time,
        offload: OffloadStorage | None = None,
    ) -> None:
        self.in_use = in_use
        self._storage = storage
        self._offload = offload
        self._reconsumer = reconsumer
        self._send_delay = send_delay_seconds
        self._retry = retry or TransientRetry()
        self._clock = clock

    def handle(self, consumer: Acknowledger, received: ReceivedMessage) -> HandlingResult:
        """Act on a message that is due. Raises only if the retry or archive send failed,
        in which case nothing was acked and the message will be delivered again."""
        namespace = namespace_of_deletion_topic(received.topic_name())
        try:
            info = message.decode(received.data())
        except DecodeError as exc:
            return self._archive(consumer, received, namespace, None, f"undecodable message: {exc}")
        with structlog.contextvars.bound_contextvars(
            ledger_id=info.ledger_id,
            topic=str(info.topic_name),
            component=info.ledger_component.value,
            ledger_type=info.ledger_type.value,
        ):
            return self._act(consumer, received, namespace, info)

    def _act(
        self,
        consumer: Acknowledger,
        received: ReceivedMessage,
        namespace: NamespaceName,
        info: PendingDeleteLedgerInfo,
    ) -> HandlingResult:
        decision = self.decide(info, namespace, not_before_seconds(received, self._send_delay))
        if decision.verdict is Verdict.RECONSUME:
            archived = self._reconsumer.reconsume_later(
                consumer, received, namespace, decision.reason
            )
            if archived is not None:
                return self._done(HandlingResult(Outcome.ARCHIVED, archived, info))
            return self._done(HandlingResult(Outcome.RECONSUMED, decision.reason, info))
        if decision.verdict is Verdict.ARCHIVE:
            return self._archive(consumer, received, namespace, info, decision.reason)
        consumer.acknowledge(received)
        gone = decision.verdict is Verdict.ALREADY_GONE
        return self._done(
            HandlingResult(Outcome.ALREADY_GONE if gone else Outcome.DELETED, decision.reason, info)
        )

    def decide(
        self,
        info: PendingDeleteLedgerInfo,
        namespace: NamespaceName,
        not_before: float,
        dry_run: bool = False,
    ) -> Decision:
        """Check, and delete if safe (unless `dry_run`); the verdict says what happened."""
        refused = check_namespace(info, namespace)
        if refused is not None:
            return refused
        if info.ledger_type is LedgerType.OFFLOAD_LEDGER and self._offload is None:
            return Decision(Verdict.ARCHIVE, "no offload storage is configured for OFFLOAD_LEDGER")
        try:
            decision = self._in_use_decision(info, not_before)
            if decision.verdict is not Verdict.DELETE:
                return decision
            return self._delete(info, dry_run)
        except VersionConflictError as exc:
            return Decision(Verdict.RECONSUME, f"ledger changed while deleting: {exc}")
        except JanitorError as exc:
            # Unknown is never "not in use": try again later.
            return Decision(Verdict.RECONSUME, f"cannot tell whether it is in use: {exc}")

    def _in_use_decision(self, info: PendingDeleteLedgerInfo, not_before: float) -> Decision:
        topic = info.topic_name
        if not info.check_ledger_still_in_use:
            # Skipping the staleness rule is only safe on a snapshot taken now.
            return decide_in_use(info, self._retry.call(lambda: self.in_use.fetch_fresh(topic)))
        snapshot: TopicLedgers = self._retry.call(lambda: self.in_use.lookup(topic))
        decision = decide_in_use(info, snapshot)
        if decision.verdict is Verdict.RECONSUME and snapshot.fetched_at < not_before:
            # A snapshot older than the message's due time cannot reflect the metadata
            # commit that followed the send: look again once before handing it back.
            decision = decide_in_use(info, self._retry.call(lambda: self.in_use.fetch_fresh(topic)))
        return decision

    def _delete(self, info: PendingDeleteLedgerInfo, dry_run: bool) -> Decision:
        record = self._retry.call(lambda: self._storage.ledger(info.ledger_id))
        if info.ledger_type is LedgerType.OFFLOAD_LEDGER:
            return self._delete_offloaded(info, record, dry_run)
        if record is None:
            return Decision(Verdict.ALREADY_GONE, f"ledger {info.ledger_id} is already gone")
        owned = check_ownership(info, record)
        if owned.verdict is not Verdict.DELETE or dry_run:
            return owned
        deleted = self._retry.call(
            lambda: self._storage.delete_ledger(info.ledger_id, record.version)
        )
        if not deleted:
            return Decision(Verdict.ALREADY_GONE, f"ledger {info.ledger_id} is already gone")
        return Decision(Verdict.DELETE, f"deleted ledger {info.ledger_id} of {info.topic_name}")

    def _delete_offloaded(
        self, info: PendingDeleteLedgerInfo, record: LedgerRecord | None, dry_run: bool
    ) -> Decision:
        """Delete the offloaded copy. If the BookKeeper copy still exists, it must be this
        topic's, as for any ledger; the offload context itself must name this ledger."""
        if record is not None:
            owned = check_ownership(info, record)
            if owned.verdict is not Verdict.DELETE:
                return owned
        offload, context = self._offload, info.ledger_info
        assert offload is not None and context is not None  # checked in decide and decode
        if dry_run:
            return Decision(Verdict.DELETE, f"offloaded ledger {info.ledger_id} may be deleted")
        name = info.topic_name.managed_ledger_name
        try:
            deleted = self._retry.call(
                lambda: offload.delete_offloaded(info.ledger_id, context, name)
            )
        except IncompleteOffloadError as exc:
            return Decision(Verdict.RECONSUME, f"offload still in progress: {exc}")
        except (DecodeError, UnsupportedOffloadDriverError) as exc:
            return Decision(Verdict.ARCHIVE, f"cannot delete offloaded ledger: {exc}")
        if not deleted:
            return Decision(
                Verdict.ALREADY_GONE, f"offloaded ledger {info.ledger_id} is already gone"
            )
        return Decision(
            Verdict.DELETE, f"deleted offloaded ledger {info.ledger_id} of {info.topic_name}"
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
        return self._done(HandlingResult(Outcome.ARCHIVED, reason, info))

    @staticmethod
    def _done(result: HandlingResult) -> HandlingResult:
        log.info(result.outcome.value, reason=result.reason)
        return result
