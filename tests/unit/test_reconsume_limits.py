"""Past the reconsume limit, and failed or unanswered sends: archived with the reason, and never
acked unless the send was."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeoutError

import pytest

from core.errors import BrokerError
from deletion.domain import message_properties as props
from tests.unit.reconsume_rig import (
    ARCHIVE_TOPIC,
    NS,
    PAYLOAD,
    REAL_TOPIC,
    RETRY_TOPIC,
    FakeMessage,
    Rig,
    _unanswered,
    rig,
)

__all__ = ["rig"]  # the fixtures


def test_failed_retry_send_propagates_and_does_not_ack(rig: Rig) -> None:
    rig.pool.fail_with = BrokerError("retry topic unavailable")
    with pytest.raises(BrokerError, match="unavailable"):
        rig.reconsumer.reconsume_later(rig.consumer, FakeMessage(), NS, "in use")
    assert rig.consumer.acked == []
    assert rig.events == [f"send {RETRY_TOPIC}"]


def test_the_last_allowed_reconsume_still_goes_to_the_retry_topic(rig: Rig) -> None:
    message = FakeMessage(props={props.RECONSUME_TIMES: "9"})
    assert not rig.reconsumer.reconsume_later(rig.consumer, message, NS, "in use")
    [sent] = rig.pool.sent
    assert sent.topic == RETRY_TOPIC
    assert sent.properties[props.RECONSUME_TIMES] == "10"


def test_past_the_maximum_goes_to_the_archive_and_is_acked(rig: Rig) -> None:
    message = FakeMessage(props={props.RECONSUME_TIMES: "10", "trace": "abc"}, key="k")
    archived = rig.reconsumer.reconsume_later(rig.consumer, message, NS, "still in use")
    assert archived
    [sent] = rig.pool.sent
    assert sent.topic == ARCHIVE_TOPIC
    assert sent.payload == PAYLOAD
    assert sent.key == "k"
    assert sent.delay_seconds == 0
    assert sent.properties[props.RECONSUME_TIMES] == "11"
    assert sent.properties["trace"] == "abc"
    assert sent.properties[props.REAL_TOPIC] == REAL_TOPIC
    assert sent.properties[props.ORIGIN_MESSAGE_ID] == "12:34:2"
    assert "still in use" in sent.properties[props.ARCHIVE_REASON]
    assert sent.properties[props.ARCHIVE_TIME] == "1700000000250"
    assert rig.consumer.acked == [message]
    assert rig.events == [f"send {ARCHIVE_TOPIC}", "ack"]


def test_garbled_reconsume_count_is_archived(rig: Rig) -> None:
    message = FakeMessage(props={props.RECONSUME_TIMES: "many"})
    assert rig.reconsumer.reconsume_later(rig.consumer, message, NS, "in use")
    assert rig.pool.sent[0].topic == ARCHIVE_TOPIC


def test_failed_archive_send_past_the_maximum_does_not_ack(rig: Rig) -> None:
    rig.pool.fail_with = BrokerError("archive unavailable")
    message = FakeMessage(props={props.RECONSUME_TIMES: "10"})
    with pytest.raises(BrokerError):
        rig.reconsumer.reconsume_later(rig.consumer, message, NS, "in use")
    assert rig.consumer.acked == []


def test_archive_keeps_bytes_and_properties_and_adds_the_reason(rig: Rig) -> None:
    payload = bytes(range(256))
    message = FakeMessage(payload=payload, props={"trace": "abc"}, key="k")
    rig.reconsumer.archive(rig.consumer, message, NS, "undecodable message")
    [sent] = rig.pool.sent
    assert sent.topic == ARCHIVE_TOPIC
    assert sent.payload == payload
    assert sent.key == "k"
    assert sent.delay_seconds == 0
    assert sent.properties == {
        "trace": "abc",
        props.REAL_TOPIC: REAL_TOPIC,
        props.REAL_SUBSCRIPTION: "ledger-deletion-worker",
        props.ORIGIN_MESSAGE_ID_Y_TIME: "12:34:2",
        props.ORIGIN_MESSAGE_ID: "12:34:2",
        props.FIRST_ATTEMPT_TIME: str(message.published_ms),
        props.ARCHIVE_REASON: "undecodable message",
        props.ARCHIVE_TIME: "1700000000250",
    }
    assert rig.consumer.acked == [message]
    assert rig.events == [f"send {ARCHIVE_TOPIC}", "ack"]


def test_failed_archive_propagates_and_does_not_ack(rig: Rig) -> None:
    rig.pool.fail_with = BrokerError("archive unavailable")
    with pytest.raises(BrokerError):
        rig.reconsumer.archive(rig.consumer, FakeMessage(), NS, "mismatch")
    assert rig.consumer.acked == []


def test_an_unanswered_retry_send_times_out_and_does_not_ack(rig: Rig) -> None:
    raised = _unanswered(rig, lambda r: r.reconsume_later(rig.consumer, FakeMessage(), NS, "x"))
    assert isinstance(raised, FutureTimeoutError)
    assert rig.consumer.acked == []
    assert rig.events == [f"send {RETRY_TOPIC}"]


def test_an_unanswered_archive_send_past_the_maximum_times_out_and_does_not_ack(
    rig: Rig,
) -> None:
    message = FakeMessage(props={props.RECONSUME_TIMES: "10"})
    raised = _unanswered(rig, lambda r: r.reconsume_later(rig.consumer, message, NS, "x"))
    assert isinstance(raised, FutureTimeoutError)
    assert rig.consumer.acked == []
    assert rig.events == [f"send {ARCHIVE_TOPIC}"]


def test_an_unanswered_archive_times_out_and_does_not_ack(rig: Rig) -> None:
    raised = _unanswered(rig, lambda r: r.archive(rig.consumer, FakeMessage(), NS, "mismatch"))
    assert isinstance(raised, FutureTimeoutError)
    assert rig.consumer.acked == []
