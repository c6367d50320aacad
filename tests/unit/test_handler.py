"""DeletionHandler's flow for one message, with fakes (pure logic): transient retries,
unknowns, the due time, ownership, the retry limit."""

from __future__ import annotations

import pytest

from consumers.received import not_before_seconds
from core.errors import MetadataError, TransientLedgerStorageError, TransientMetadataError
from deletion.domain import message
from deletion.domain.decision import SafetyMargins
from deletion.domain.outcome import Outcome
from deletion.domain.ports import LedgerRecord
from deletion.domain.topics import TopicName
from tests.unit.handler_rig import (
    NOW,
    NS,
    TOPIC,
    FakeMessage,
    Rig,
    _info,
    _outcomes,
    _record,
    rig,
)

__all__ = ["rig"]  # the fixture


def test_unreferenced_ledger_is_deleted_and_acked(rig: Rig) -> None:
    result = rig.handle(_info(3))
    assert result.outcome is Outcome.DELETED
    assert result.reason == f"deleted ledger 3 of {TOPIC}"
    assert rig.storage.deleted == [3]
    assert len(rig.consumer.acked) == 1 and rig.pool.sent == []


def test_transient_failures_are_retried_in_place_not_reconsumed(rig: Rig) -> None:
    rig.source.failures = [TransientMetadataError("connection loss")] * 2
    rig.storage.failures = [TransientLedgerStorageError("timeout")]
    result = rig.handle(_info(3))
    assert result.outcome is Outcome.DELETED
    assert rig.pool.sent == []  # no reconsume
    assert len(rig.sleeps) == 3  # injected sleep: the test never waits


def test_persistent_metadata_failure_means_unknown_so_reconsume(rig: Rig) -> None:
    rig.source.failures = [TransientMetadataError("down")] * 10
    result = rig.handle(_info(3))
    assert result.outcome is Outcome.RECONSUMED
    assert rig.storage.deleted == []
    topic, _, properties = rig.pool.sent[0]
    assert topic == NS.retry_topic
    assert properties["RECONSUMETIMES"] == "1"
    assert "cannot tell whether it is in use: down" in result.reason


def test_non_transient_metadata_error_is_not_retried(rig: Rig) -> None:
    rig.source.failures = [MetadataError("corrupt")]
    result = rig.handle(_info(3))
    assert result.outcome is Outcome.RECONSUMED
    assert rig.source.calls == 1 and rig.sleeps == []


def test_referenced_ledger_is_reconsumed_with_java_properties(rig: Rig) -> None:
    result = rig.handle(_info(5))
    assert result.outcome is Outcome.RECONSUMED
    _, payload, properties = rig.pool.sent[0]
    assert message.decode(payload).ledger_id == 5
    assert properties["REAL_TOPIC"] == NS.deletion_topic  # without -partition-2, as Java
    assert properties["ORIGIN_MESSAGE_ID"] == "3:9:2"
    assert properties["ORIGIN_MESSAGE_IDY_TIME"] == "3:9:2"
    assert properties["DELAY_TIME"] == "600000"


def test_nothing_is_deleted_on_a_snapshot_read_before_the_message_was_due(rig: Rig) -> None:
    # Due at NOW - 100 + 200 + 10: the only snapshot there is was read at NOW.
    result = rig.handle(_info(3), DELAY_TIME="200000")
    assert result.outcome is Outcome.RECONSUMED
    assert "predates the message's due time" in result.reason
    assert rig.storage.deleted == []


@pytest.mark.parametrize("delay", ["0", "-5000", "garbage", None])
def test_the_configured_send_delay_is_a_floor_for_the_messages_own_delay(
    rig: Rig, delay: str | None
) -> None:
    """Published 30 s ago with DELAY_TIME=0: still due only at publish + 60 s + 10 s skew."""
    props = {} if delay is None else {"DELAY_TIME": delay}
    payload = message.encode(_info(3))

    class Recent(FakeMessage):
        def publish_timestamp(self) -> int:
            return int((NOW - 30) * 1000)

    handler = rig.handler()
    arrival = handler.arrival(rig.consumer, Recent(payload, props))
    assert arrival.due == NOW - 30 + 60 + 10
    (result,) = handler.handle_batch([arrival])
    assert not isinstance(result, Exception)
    assert result.outcome is Outcome.RECONSUMED
    assert rig.storage.deleted == []


@pytest.mark.parametrize(
    ("delay", "floor", "skew", "after_publish"),
    [
        ("123456", 60, 10, 123.456 + 10),  # DELAY_TIME is in milliseconds
        ("1500", 0, 0, 1.5),
        (None, 0, 0, 0),
        ("0", 0, 2.5, 2.5),
    ],
)
def test_the_due_time_is_publish_time_plus_delay_plus_skew_in_seconds(
    delay: str | None, floor: float, skew: float, after_publish: float
) -> None:
    received = FakeMessage(b"", {} if delay is None else {"DELAY_TIME": delay})
    due = not_before_seconds(received, floor, skew)
    assert due == pytest.approx(NOW - 100 + after_publish, abs=1e-6)


def test_an_arrival_is_worked_out_once_from_its_topic_and_publish_time(rig: Rig) -> None:
    arrival = rig.handler().arrival(rig.consumer, FakeMessage(b""))  # on a partition of NS's
    assert (arrival.namespace, arrival.due) == (NS, NOW - 100 + 60 + 10)
    assert arrival.consumer is rig.consumer


def test_a_young_ledger_waits_once_for_exactly_as_long_as_it_still_needs(rig: Rig) -> None:
    """Below the managed ledger's newest (9), 600 s old: too young by 3010 s; reconsumed
    once with that delay instead of the 600 s reconsume delay, six times over."""
    young_ms = int((NOW - 600) * 1000)
    rig.storage.records[6] = LedgerRecord(6, _record(6).custom_metadata, young_ms, 1)
    rig.storage.records[7] = _record(7)  # created at the epoch: old
    results = rig.handle_batch(_info(6), _info(7))
    assert _outcomes(results) == ["reconsumed", "deleted"]
    assert results[0].reason.startswith("ledger 6 is too young (590s of 3600s)")
    assert rig.storage.deleted == [7]
    (retry,) = rig.pool.sent
    assert retry[2]["DELAY_TIME"] == str((3600 + 10 - 600) * 1000)


def test_an_old_ledger_above_the_managed_ledgers_newest_is_deleted(rig: Rig) -> None:
    """A zombie: created, never recorded, and the topic never rolled over since. Older than
    the age rule, nothing can record it any more."""
    rig.storage.records[12] = _record(12)  # created at the epoch
    (result,) = rig.handle_batch(_info(12))
    assert result.outcome is Outcome.DELETED, result.reason
    assert rig.storage.deleted == [12]


def test_with_the_age_rule_off_a_ledger_above_the_newest_is_kept_however_old(rig: Rig) -> None:
    rig.margins = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=0)
    rig.storage.records[12] = _record(12)  # created at the epoch
    (result,) = rig.handle_batch(_info(12))
    assert result.outcome is Outcome.RECONSUMED
    assert "has recorded no ledger after 12 (its newest is 9)" in result.reason
    assert rig.pool.sent[0][2]["DELAY_TIME"] == "600000"  # the policy's delay
    assert rig.storage.deleted == []


def test_a_ledger_of_unknown_age_is_kept(rig: Rig) -> None:
    rig.storage.records[4] = LedgerRecord(4, _record(4).custom_metadata, None, 1)
    (result,) = rig.handle_batch(_info(4))
    assert result.outcome is Outcome.RECONSUMED
    assert "unknown" in result.reason
    assert rig.storage.deleted == []


def test_already_gone_is_success(rig: Rig) -> None:
    result = rig.handle(_info(7))
    assert result.outcome is Outcome.ALREADY_GONE
    assert result.reason == "ledger 7 is already gone"
    assert len(rig.consumer.acked) == 1


def test_skip_in_use_check_still_refuses_a_referenced_ledger(rig: Rig) -> None:
    assert rig.handle(_info(9, check=False)).outcome is Outcome.RECONSUMED
    assert rig.storage.deleted == []


def test_ownership_mismatch_is_archived(rig: Rig) -> None:
    rig.storage.records[3] = _record(3, TopicName(NS, "someone-else"))
    result = rig.handle(_info(3))
    assert result.outcome is Outcome.ARCHIVED
    assert rig.pool.sent[0][0] == NS.archive_topic
    assert rig.storage.deleted == []


def test_past_the_maximum_the_message_is_archived_with_the_reason(rig: Rig) -> None:
    result = rig.handle(_info(5), RECONSUMETIMES="10")
    assert result.outcome is Outcome.ARCHIVED
    topic, _, properties = rig.pool.sent[0]
    assert topic == NS.archive_topic
    assert properties["RECONSUMETIMES"] == "11"
    assert properties["ARCHIVE_REASON"].startswith("gave up after 10 reconsumes")
