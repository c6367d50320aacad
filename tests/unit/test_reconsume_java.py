"""What Java's ConsumerImpl does on reconsumeLater and the dead letter, matched one by one
(apache/pulsar pulsar-client/.../impl/ConsumerImpl.java, .../util/RetryMessageUtil.java)."""

from __future__ import annotations

import pytest

from consumers.reconsume import Reconsumer, RetryPolicy
from core.errors import BrokerError
from deletion.domain import message_properties as props
from tests.unit.reconsume_rig import (
    ARCHIVE_TOPIC,
    NOW,
    NS,
    RETRY_TOPIC,
    FakeConsumer,
    FakeMessage,
    FakeMessageId,
    FakePool,
)


def _rig(max_redeliver: int | None = 3) -> tuple[list[str], FakePool, FakeConsumer, Reconsumer]:
    events: list[str] = []
    pool = FakePool(events)
    policy = RetryPolicy(
        delay_seconds=600, max_reconsume_times=10, max_redeliver_count=max_redeliver
    )
    return events, pool, FakeConsumer(events), Reconsumer(pool, policy, clock=lambda: NOW)  # type: ignore[arg-type]


def test_origin_id_is_set_under_javas_spelling_and_the_new_one() -> None:
    # RetryMessageUtil.SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_IDY_TIME"
    _, pool, consumer, reconsumer = _rig()
    reconsumer.reconsume_later(consumer, FakeMessage(), NS, "in use")
    sent = pool.sent[0].properties
    assert sent["ORIGIN_MESSAGE_IDY_TIME"] == "12:34:2"
    assert sent["ORIGIN_MESSAGE_ID"] == "12:34:2"


def test_an_origin_already_set_is_kept_under_both_names() -> None:
    _, pool, consumer, reconsumer = _rig()
    carried = {"ORIGIN_MESSAGE_IDY_TIME": "1:2:3", "ORIGIN_MESSAGE_ID": "1:2:3"}
    reconsumer.reconsume_later(consumer, FakeMessage(props=carried), NS, "in use")
    sent = pool.sent[0].properties
    assert (sent["ORIGIN_MESSAGE_IDY_TIME"], sent["ORIGIN_MESSAGE_ID"]) == ("1:2:3", "1:2:3")


@pytest.mark.parametrize(
    ("arrived_on", "real_topic"),
    [
        ("persistent://t/ns/__ledger_deletion-partition-2", "persistent://t/ns/__ledger_deletion"),
        ("persistent://t/ns/__ledger_deletion", "persistent://t/ns/__ledger_deletion"),
        # Not a partition by TopicName.getPartitionIndex: the name is kept whole.
        (
            "persistent://t/ns/__ledger_deletion-partition-01",
            "persistent://t/ns/__ledger_deletion-partition-01",
        ),
    ],
)
def test_real_topic_has_no_partition_suffix(arrived_on: str, real_topic: str) -> None:
    _, pool, consumer, reconsumer = _rig()
    reconsumer.reconsume_later(consumer, FakeMessage(topic=arrived_on), NS, "in use")
    assert pool.sent[0].properties[props.REAL_TOPIC] == real_topic


def test_key_and_ordering_key_are_copied_to_retry_and_archive() -> None:
    _, pool, consumer, reconsumer = _rig()
    message = FakeMessage(key="k", ordering="order-1")
    reconsumer.reconsume_later(consumer, message, NS, "in use")
    reconsumer.archive(consumer, message, NS, "mismatch")
    assert [(s.topic, s.key, s.ordering_key) for s in pool.sent] == [
        (RETRY_TOPIC, "k", "order-1"),
        (ARCHIVE_TOPIC, "k", "order-1"),
    ]


def test_no_ordering_key_is_sent_as_none() -> None:
    _, pool, consumer, reconsumer = _rig()
    reconsumer.reconsume_later(consumer, FakeMessage(), NS, "in use")
    assert pool.sent[0].ordering_key is None


# --- DeadLetterPolicy.maxRedeliverCount ------------------------------------------------------


def test_hand_back_below_the_limit_negatively_acks() -> None:
    events, pool, consumer, reconsumer = _rig(max_redeliver=3)
    message = FakeMessage(redeliveries=2)
    assert reconsumer.hand_back(consumer, message, NS, "zookeeper down") is None
    assert consumer.nacked == [message] and consumer.acked == []
    assert pool.sent == [] and events == ["nack"]


def test_hand_back_at_the_limit_goes_to_the_archive_instead_of_looping() -> None:
    events, pool, consumer, reconsumer = _rig(max_redeliver=3)
    message = FakeMessage(redeliveries=3, props={"trace": "abc"}, key="k", ordering="o")
    why = reconsumer.hand_back(consumer, message, NS, "zookeeper down")
    assert why is not None and "3 redeliveries" in why and "zookeeper down" in why
    [sent] = pool.sent
    assert (sent.topic, sent.key, sent.ordering_key) == (ARCHIVE_TOPIC, "k", "o")
    assert sent.properties["trace"] == "abc"
    assert sent.properties[props.ARCHIVE_REASON] == why
    assert sent.properties["ORIGIN_MESSAGE_IDY_TIME"] == "12:34:2"
    assert consumer.nacked == [] and consumer.acked == [message]
    assert events == [f"send {ARCHIVE_TOPIC}", "ack"]


def test_hand_back_with_the_archive_unreachable_still_redelivers() -> None:
    events, pool, consumer, reconsumer = _rig(max_redeliver=3)
    pool.fail_with = BrokerError("archive unavailable")
    message = FakeMessage(redeliveries=7)
    assert reconsumer.hand_back(consumer, message, NS, "broker down") is None
    assert consumer.acked == [] and consumer.nacked == [message]
    assert events == [f"send {ARCHIVE_TOPIC}", "nack"]


def test_hand_back_without_a_limit_never_archives() -> None:
    _, pool, consumer, reconsumer = _rig(max_redeliver=None)
    message = FakeMessage(redeliveries=10_000, id=FakeMessageId(1, 2, -1))
    assert reconsumer.hand_back(consumer, message, NS, "x") is None
    assert pool.sent == [] and consumer.nacked == [message]
