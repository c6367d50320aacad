"""Phase two for a batch of messages: decode, check, delete idempotently, then ack each,
reconsume it later, or archive it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import structlog

from consumers.received import Acknowledger, Arrival, ReceivedMessage, not_before_seconds
from consumers.reconsume import Reconsumer
from core.clock import EpochSeconds, WallClock, wall_clock
from core.errors import DecodeError
from core.retry import TransientRetry
from deletion.domain import message
from deletion.domain.decision import Decision, SafetyMargins, Verdict
from deletion.domain.deleter import Candidate, LedgerDeleter, Ruling
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.offload_port import OffloadStorage
from deletion.domain.outcome import Outcome, Result
from deletion.domain.ports import LedgerStorage, Session
from deletion.domain.topics import NamespaceName, namespace_of_deletion_topic
from transport.client import java_message_id
from transport.schema import written

log = structlog.get_logger(__name__)


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
        session: Callable[[], Session] | None = None,
    ) -> None:
        """`session`: the stores' connection (LedgerDeleter); the ledger store's if None."""
        self.in_use = in_use
        self._deleter = LedgerDeleter(
            in_use, storage, retry or TransientRetry(), offload, margins, clock, session
        )
        self._reconsumer = reconsumer
        self._margins = margins
        self._clock = clock

    def arrival(self, consumer: Acknowledger, received: ReceivedMessage) -> Arrival:
        """The message as it arrives: its namespace, and when it may be acted on by the
        configured margins."""
        namespace = namespace_of_deletion_topic(received.topic_name())
        margins = self._margins
        due = not_before_seconds(received, margins.send_delay, margins.clock_skew)
        return Arrival(consumer, received, namespace, due)

    def handle(self, arrival: Arrival) -> Result:
        """Act on a message that is due. Raises only if the retry or archive send failed,
        in which case nothing was acked and the message will be delivered again."""
        (result,) = self.handle_batch([arrival])
        if isinstance(result, Exception):
            raise result
        return result

    def handle_batch(self, batch: Sequence[Arrival]) -> list[Result | Exception]:
        """Act on messages that are due, checking and deleting them as one batch. A message
        whose retry or archive send failed gets its error instead: it was not acked."""
        infos = [_decoded(arrival.message) for arrival in batch]
        candidates = [
            Candidate(info, arrival.namespace, arrival.due)
            for arrival, info in zip(batch, infos, strict=True)
            if isinstance(info, PendingDeleteLedgerInfo)
        ]
        rulings = iter(self._deleter.decide(candidates))
        results: list[Result | Exception] = []
        debug = log.is_enabled_for(logging.DEBUG)  # asked once a batch: it costs an ack's half
        for arrival, info in zip(batch, infos, strict=True):
            ruling = None if isinstance(info, DecodeError) else next(rulings)
            if isinstance(ruling, Result):
                assert isinstance(info, PendingDeleteLedgerInfo)  # decoded, since ruled on
                results.append(self._settled(arrival, info, ruling, debug))
            else:
                results.append(self._unsettled(arrival, info, ruling))
        return results

    def _settled(
        self, arrival: Arrival, info: PendingDeleteLedgerInfo, result: Result, debug: bool
    ) -> Result | Exception:
        """Deleted, or already gone: ack it. The common case, and so kept lean: the message's
        fields go to its one log line, and are worked out only when that line is wanted."""
        try:
            arrival.consumer.acknowledge(arrival.message)
        except Exception as exc:  # nothing was acked: it will be delivered again
            with _logging_context(arrival, info):
                log.warning("handing back for redelivery", error=str(exc))
            return exc
        if debug:  # INFO says a summary: log_summary.py
            log.debug(result.outcome.value, reason=result.reason, **_fields(arrival, info))
        return result

    def _unsettled(
        self,
        arrival: Arrival,
        info: PendingDeleteLedgerInfo | DecodeError,
        ruling: Decision | None,
    ) -> Result | Exception:
        """Not deleted now: archived or reconsumed, with the message's fields bound to every
        log line said meanwhile (by the reconsumer too)."""
        with _logging_context(arrival, info):
            try:
                if isinstance(info, DecodeError):
                    return self._archive(arrival, None, f"undecodable message: {info}")
                assert ruling is not None  # every decoded message is ruled on
                return self._act(arrival, info, ruling)
            except Exception as exc:  # a failed retry or archive send: nothing was acked
                log.warning("handing back for redelivery", error=str(exc))
                return exc

    def hand_back(self, arrival: Arrival, reason: str) -> str | None:
        """Redeliver a message that could not be handled; archive it instead once it has been
        redelivered too often (see Reconsumer.hand_back), and then say why."""
        return self._reconsumer.hand_back(
            arrival.consumer, arrival.message, arrival.namespace, reason
        )

    def decide(
        self,
        info: PendingDeleteLedgerInfo,
        namespace: NamespaceName,
        not_before: EpochSeconds,
        dry_run: bool = False,
    ) -> Ruling:
        """Check, and delete if safe (unless `dry_run`): a Result says what was done, a
        Decision that it is not to be deleted now."""
        (ruling,) = self._deleter.decide([Candidate(info, namespace, not_before)], dry_run)
        return ruling

    def _act(self, arrival: Arrival, info: PendingDeleteLedgerInfo, ruling: Decision) -> Result:
        if ruling.verdict is Verdict.REFUSED:
            return self._archive(arrival, info, ruling.reason)
        return self._reconsume(arrival, info, ruling)

    def _reconsume(
        self, arrival: Arrival, info: PendingDeleteLedgerInfo, decision: Decision
    ) -> Result:
        # Too young: come back once old enough (one reconsume), not every reconsume delay.
        delay = None if decision.old_at is None else decision.old_at - self._clock()
        archived = self._reconsumer.reconsume_later(
            arrival.consumer, arrival.message, arrival.namespace, decision.reason, delay
        )
        if archived is not None:
            return _done(Result(Outcome.ARCHIVED, archived, info))
        return _done(Result(Outcome.RECONSUMED, decision.reason, info))

    def _archive(
        self, arrival: Arrival, info: PendingDeleteLedgerInfo | None, reason: str
    ) -> Result:
        self._reconsumer.archive(arrival.consumer, arrival.message, arrival.namespace, reason)
        return _done(Result(Outcome.ARCHIVED, reason, info))


def _decoded(received: ReceivedMessage) -> PendingDeleteLedgerInfo | DecodeError:
    try:
        return message.decode(*written(received))
    except DecodeError as exc:
        return exc


def _logging_context(
    arrival: Arrival, info: PendingDeleteLedgerInfo | DecodeError
) -> AbstractContextManager[None]:
    return structlog.contextvars.bound_contextvars(**_fields(arrival, info))


def _fields(arrival: Arrival, info: PendingDeleteLedgerInfo | DecodeError) -> dict[str, object]:
    """What every log line about this message carries."""
    received = arrival.message
    fields: dict[str, object] = {
        "message_id": java_message_id(received.message_id()),
        "namespace": str(arrival.namespace),
        "deletion_topic": received.topic_name(),
    }
    if isinstance(info, PendingDeleteLedgerInfo):
        fields.update(
            ledger_id=info.ledger_id,
            topic=str(info.topic_name),
            component=info.ledger_component.value,
            ledger_type=info.ledger_type.value,
        )
    return fields


def _done(result: Result) -> Result:
    """An archive is said at INFO (rare, and what an admin acts on); a reconsume at DEBUG,
    counted in the INFO summary (log_summary.py)."""
    if result.outcome is Outcome.ARCHIVED:
        log.info(result.outcome.value, reason=result.reason)
    else:
        log.debug(result.outcome.value, reason=result.reason)
    return result
