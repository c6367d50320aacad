"""The archive drain acks an archived message only once what replaces it is confirmed: the
phase-one re-send of a requeued message, or the re-archive send. A failed send after the ack
would lose the pending deletion for good. The handler is the real one, on handler_rig's
fakes; the consumer and the sends record their order."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest

from consumers.archive import ArchivedMessage, ArchiveDrain
from core.errors import EnqueueError, TransientBrokerError
from deletion.domain import message
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome
from deletion.domain.ports import LedgerRecord
from tests.unit.handler_rig import NOW, NS, FakeMessage, Rig, _info, _record, rig

__all__ = ["rig"]  # the fixture


@dataclass
class Journal:
    events: list[str] = field(default_factory=list)


@dataclass
class OrderedConsumer:
    journal: Journal

    def acknowledge(self, received: Any) -> None:
        self.journal.events.append("ack")


@dataclass
class FailingPhaseOne:
    journal: Journal
    fails: bool

    def enqueue(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Any]:
        self.journal.events.append("enqueue")
        if self.fails:
            raise EnqueueError("the broker did not confirm the send")
        return ["id"]

    def enqueue_then_commit(self, infos: Any, commit: Any) -> Any:
        raise AssertionError("not expected")


@dataclass
class FailingPool:
    journal: Journal
    fails: bool

    def send(self, topic: str, payload: bytes, properties: Any, key: Any = None) -> Future[Any]:
        self.journal.events.append("re-archive")
        done: Future[Any] = Future()
        if self.fails:
            done.set_exception(TransientBrokerError("the broker did not confirm the send"))
        else:
            done.set_result("id")
        return done


def _drain(rig: Rig, journal: Journal, fails: bool) -> ArchiveDrain:
    return ArchiveDrain(
        client=None,  # _settle never subscribes
        handler=rig.handler(),
        phase_one=FailingPhaseOne(journal, fails),
        pool=FailingPool(journal, fails),  # type: ignore[arg-type]
        clock=lambda: NOW,
    )


def _archived(info: PendingDeleteLedgerInfo) -> ArchivedMessage:
    received = FakeMessage(message.encode(info), {"ARCHIVE_REASON": "gave up"})
    return ArchivedMessage.of(NS, received)


def _young(rig: Rig) -> PendingDeleteLedgerInfo:
    """Unreferenced but too young: the drain requeues it."""
    young_ms = int((NOW - 60) * 1000)
    rig.storage.records[6] = LedgerRecord(6, _record(6).custom_metadata, young_ms, 1)
    return _info(6)


@pytest.mark.parametrize(
    ("which", "sent", "outcome"),
    [("young", "enqueue", Outcome.REQUEUED), ("referenced", "re-archive", Outcome.REARCHIVED)],
)
def test_the_archived_message_is_acked_after_its_replacement_is_confirmed(
    rig: Rig, which: str, sent: str, outcome: Outcome
) -> None:
    journal = Journal()
    info = _young(rig) if which == "young" else _info(5)
    settled = _drain(rig, journal, fails=False)._settle(
        OrderedConsumer(journal), _archived(info), dry_run=False
    )
    assert settled[0] is outcome
    assert journal.events == [sent, "ack"]


@pytest.mark.parametrize("which", ["young", "referenced"])
def test_a_failed_replacement_send_leaves_the_archived_message_unacked(
    rig: Rig, which: str
) -> None:
    journal = Journal()
    info = _young(rig) if which == "young" else _info(5)
    drain = _drain(rig, journal, fails=True)
    with pytest.raises((EnqueueError, TransientBrokerError)):
        drain._settle(OrderedConsumer(journal), _archived(info), dry_run=False)
    assert "ack" not in journal.events  # still archived: redelivered to the next drain
    assert journal.events in (["enqueue"], ["re-archive"])


@dataclass
class RecordingPool:
    sent: list[tuple[str, bytes, dict[str, str], Any]] = field(default_factory=list)

    def send(self, topic: str, payload: bytes, properties: Any, key: Any = None) -> Future[Any]:
        self.sent.append((topic, payload, dict(properties), key))
        done: Future[Any] = Future()
        done.set_result("id")
        return done


def test_a_rearchived_message_keeps_its_bytes_key_and_properties_and_says_why(rig: Rig) -> None:
    pool, journal = RecordingPool(), Journal()
    drain = ArchiveDrain(None, rig.handler(), FailingPhaseOne(journal, False), pool, lambda: NOW)  # type: ignore[arg-type]
    payload = message.encode(_info(5))
    received = FakeMessage(payload, {"ARCHIVE_REASON": "gave up", "DRAIN_ATTEMPTS": "2", "x": "y"})
    drain._settle(OrderedConsumer(journal), ArchivedMessage.of(NS, received), dry_run=False)
    ((topic, sent, properties, key),) = pool.sent
    assert (topic, sent, key) == (NS.archive_topic, payload, "k")
    assert properties == {
        "x": "y",
        "ARCHIVE_REASON": f"ledger 5 is still referenced by {_info(5).topic_name}",
        "ARCHIVE_TIME": str(int(NOW * 1000)),
        "DRAIN_ATTEMPTS": "3",
    }


def test_an_undecodable_archived_message_is_archived_again_with_its_reason(rig: Rig) -> None:
    pool, journal = RecordingPool(), Journal()
    drain = ArchiveDrain(None, rig.handler(), FailingPhaseOne(journal, False), pool, lambda: NOW)  # type: ignore[arg-type]
    received = FakeMessage(b"\x00junk", {"ARCHIVE_REASON": "undecodable message: junk"})
    outcome, reason = drain._settle(
        OrderedConsumer(journal), ArchivedMessage.of(NS, received), dry_run=False
    )
    assert (outcome, reason) == (Outcome.REARCHIVED, "undecodable message: junk")
    assert pool.sent[0][2]["ARCHIVE_REASON"] == "undecodable message: junk"
    assert journal.events == ["ack"]


@pytest.mark.parametrize(
    ("which", "outcome"),
    [("young", Outcome.WOULD_REQUEUE), ("referenced", Outcome.WOULD_REARCHIVE)],
)
def test_a_dry_run_sends_and_acks_nothing(rig: Rig, which: str, outcome: Outcome) -> None:
    pool, journal = RecordingPool(), Journal()
    drain = ArchiveDrain(None, rig.handler(), FailingPhaseOne(journal, False), pool, lambda: NOW)  # type: ignore[arg-type]
    info = _young(rig) if which == "young" else _info(5)
    settled = drain._settle(OrderedConsumer(journal), _archived(info), dry_run=True)
    assert settled[0] is outcome
    assert journal.events == [] and pool.sent == []
