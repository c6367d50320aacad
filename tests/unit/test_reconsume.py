"""Reconsume-later as Java's client does it: the retry topic's properties, ids and delays."""

from __future__ import annotations

from consumers.reconsume import Reconsumer, RetryPolicy
from deletion.domain import message_properties as props
from tests.unit.reconsume_rig import (
    NOW,
    NS,
    PAYLOAD,
    REAL_TOPIC,
    RETRY_TOPIC,
    FakeConsumer,
    FakeMessage,
    FakeMessageId,
    FakePool,
    Rig,
    rig,
)
from transport.client import java_message_id

__all__ = ["rig"]  # the fixtures


def test_java_message_id_is_messageidimpl_tostring() -> None:
    assert java_message_id(FakeMessageId(12, 34, 2)) == "12:34:2"
    assert java_message_id(FakeMessageId(12, 34, -1)) == "12:34:-1"  # non-partitioned
    assert java_message_id(FakeMessageId(12, 34, 2, batch=5)) == "12:34:2:5"  # BatchMessageIdImpl


def test_first_reconsume_sets_the_java_properties(rig: Rig) -> None:
    message = FakeMessage(props={"trace": "abc", "REAL": "kept"}, key="ledger-7")
    archived = rig.reconsumer.reconsume_later(rig.consumer, message, NS, "in use")
    assert not archived
    [sent] = rig.pool.sent
    assert sent.topic == RETRY_TOPIC
    assert sent.payload == PAYLOAD
    assert sent.key == "ledger-7"
    assert sent.delay_seconds == 600
    assert sent.properties == {
        "trace": "abc",
        "REAL": "kept",
        props.REAL_TOPIC: REAL_TOPIC,
        props.REAL_SUBSCRIPTION: "ledger-deletion-worker",
        props.ORIGIN_MESSAGE_ID_Y_TIME: "12:34:2",
        props.ORIGIN_MESSAGE_ID: "12:34:2",
        props.FIRST_ATTEMPT_TIME: str(message.published_ms),
        props.RECONSUME_TIMES: "1",
        props.DELAY_TIME: "600000",
    }
    assert rig.consumer.acked == [message]
    assert rig.events == [f"send {RETRY_TOPIC}", "ack"]


def test_received_properties_are_copied_not_mutated(rig: Rig) -> None:
    original = {"trace": "abc"}
    rig.reconsumer.reconsume_later(rig.consumer, FakeMessage(props=original), NS, "in use")
    assert original == {"trace": "abc"}


def test_later_reconsume_keeps_real_topic_and_origin_and_increments(rig: Rig) -> None:
    # A message coming back from the retry topic: its own topic and id are the retry's.
    message = FakeMessage(
        props={
            props.REAL_TOPIC: "persistent://t/ns/__ledger_deletion-partition-0",
            props.ORIGIN_MESSAGE_ID: "5:6:0",
            props.RECONSUME_TIMES: "3",
            props.DELAY_TIME: "600000",
        },
        topic=RETRY_TOPIC,
        id=FakeMessageId(77, 1, -1),
    )
    rig.reconsumer.reconsume_later(rig.consumer, message, NS, "in use")
    [sent] = rig.pool.sent
    assert sent.properties[props.REAL_TOPIC] == "persistent://t/ns/__ledger_deletion-partition-0"
    assert sent.properties[props.ORIGIN_MESSAGE_ID] == "5:6:0"
    assert sent.properties[props.RECONSUME_TIMES] == "4"
    assert sent.topic == RETRY_TOPIC


def test_batched_origin_message_id_has_the_batch_index(rig: Rig) -> None:
    message = FakeMessage(id=FakeMessageId(12, 34, 2, batch=0))
    rig.reconsumer.reconsume_later(rig.consumer, message, NS, "in use")
    assert rig.pool.sent[0].properties[props.ORIGIN_MESSAGE_ID] == "12:34:2:0"


def test_delay_time_is_in_milliseconds() -> None:
    events: list[str] = []
    pool = FakePool(events)
    reconsumer = Reconsumer(pool, RetryPolicy(1.5, 10), clock=lambda: NOW)  # type: ignore[arg-type]
    reconsumer.reconsume_later(FakeConsumer(events), FakeMessage(), NS, "in use")
    assert pool.sent[0].properties[props.DELAY_TIME] == "1500"
    assert pool.sent[0].delay_seconds == 1.5


def test_absent_key_is_sent_without_one(rig: Rig) -> None:
    rig.reconsumer.reconsume_later(rig.consumer, FakeMessage(key=""), NS, "in use")
    assert rig.pool.sent[0].key is None
