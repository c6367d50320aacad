"""Reconsume-later and the archive, emulating the Java client's retry/dead-letter semantics."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass, field
from typing import Any

import pytest

from consumers.reconsume import Reconsumer, RetryPolicy
from core.errors import BrokerError
from deletion.domain import message_properties as props
from deletion.domain.topics import NamespaceName
from transport.client import java_message_id

NS = NamespaceName("t", "ns")
ARRIVED_ON = "persistent://t/ns/__ledger_deletion-partition-2"
REAL_TOPIC = "persistent://t/ns/__ledger_deletion"  # Java's REAL_TOPIC: no partition suffix
RETRY_TOPIC = "persistent://t/ns/__ledger_deletion-ledger-deletion-worker-RETRY"
ARCHIVE_TOPIC = "persistent://t/ns/__ledger_deletion_archive"
NOW = 1_700_000_000.25
PAYLOAD = b"\x02\x00avro\xff\x00bytes"


@dataclass(frozen=True)
class FakeMessageId:
    ledger: int
    entry: int
    partition_index: int
    batch: int = -1

    def ledger_id(self) -> int:
        return self.ledger

    def entry_id(self) -> int:
        return self.entry

    def partition(self) -> int:
        return self.partition_index

    def batch_index(self) -> int:
        return self.batch


@dataclass
class FakeMessage:
    payload: bytes = PAYLOAD
    props: dict[str, str] = field(default_factory=dict)
    key: str = ""
    topic: str = ARRIVED_ON
    id: FakeMessageId = field(default_factory=lambda: FakeMessageId(12, 34, 2))
    published_ms: int = 1_699_999_000_000
    ordering: str = ""
    redeliveries: int = 0

    def data(self) -> bytes:
        return self.payload

    def properties(self) -> dict[str, str]:
        return self.props

    def publish_timestamp(self) -> int:
        return self.published_ms

    def topic_name(self) -> str:
        return self.topic

    def message_id(self) -> Any:
        return self.id

    def partition_key(self) -> str:
        return self.key

    def ordering_key(self) -> str:
        return self.ordering

    def redelivery_count(self) -> int:
        return self.redeliveries


@dataclass(frozen=True)
class Sent:
    topic: str
    payload: bytes
    properties: dict[str, str]
    key: str | None
    delay_seconds: float
    ordering_key: str | None = None


class FakePool:
    """ProducerPool.send's contract; every send is logged in `events` next to the acks."""

    def __init__(self, events: list[str]) -> None:
        self.sent: list[Sent] = []
        self.events = events
        self.fail_with: Exception | None = None
        self.unanswered = False

    def send(
        self,
        topic: str,
        payload: bytes,
        properties: Mapping[str, str],
        key: str | None = None,
        delay_seconds: float = 0.0,
        ordering_key: str | None = None,
    ) -> Future[Any]:
        self.sent.append(Sent(topic, payload, dict(properties), key, delay_seconds, ordering_key))
        self.events.append(f"send {topic}")
        future: Future[Any] = Future()
        if self.unanswered:
            return future  # the broker never acknowledges
        if self.fail_with is not None:
            future.set_exception(self.fail_with)
        else:
            future.set_result(FakeMessageId(99, len(self.sent), 0))
        return future


class FakeConsumer:
    def __init__(self, events: list[str]) -> None:
        self.acked: list[Any] = []
        self.nacked: list[Any] = []
        self.events = events

    def acknowledge(self, message: Any) -> None:
        self.acked.append(message)
        self.events.append("ack")

    def negative_acknowledge(self, message: Any) -> None:
        self.nacked.append(message)
        self.events.append("nack")


@dataclass
class Rig:
    events: list[str]
    pool: FakePool
    consumer: FakeConsumer
    reconsumer: Reconsumer


@pytest.fixture
def rig() -> Rig:
    events: list[str] = []
    pool = FakePool(events)
    policy = RetryPolicy(delay_seconds=600, max_reconsume_times=10)
    reconsumer = Reconsumer(pool, policy, clock=lambda: NOW)  # type: ignore[arg-type]
    return Rig(events, pool, FakeConsumer(events), reconsumer)


# --- message ids -----------------------------------------------------------------------------


def test_java_message_id_is_messageidimpl_tostring() -> None:
    assert java_message_id(FakeMessageId(12, 34, 2)) == "12:34:2"
    assert java_message_id(FakeMessageId(12, 34, -1)) == "12:34:-1"  # non-partitioned
    assert java_message_id(FakeMessageId(12, 34, 2, batch=5)) == "12:34:2:5"  # BatchMessageIdImpl


# --- reconsume later -------------------------------------------------------------------------


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


# --- archive ---------------------------------------------------------------------------------


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


# --- sends the broker never acknowledges ------------------------------------------------------


def _unanswered(rig: Rig, attempt: Callable[[Reconsumer], object]) -> BaseException | None:
    """Run `attempt` with a short send timeout; what it raised, once it gave up waiting."""
    rig.pool.unanswered = True
    policy = RetryPolicy(delay_seconds=600, max_reconsume_times=10, send_timeout_seconds=0.05)
    reconsumer = Reconsumer(rig.pool, policy, clock=lambda: NOW)  # type: ignore[arg-type]
    raised: list[BaseException] = []

    def run() -> None:
        try:
            attempt(reconsumer)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    # Waiting without a bound would hold the message, unacked, for ever.
    thread.join(30)
    assert not thread.is_alive(), "still waiting for an acknowledgement that never comes"
    return raised[0] if raised else None


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
