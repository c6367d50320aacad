"""Fakes shared by the reconsume tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest

from consumers.reconsume import Reconsumer, RetryPolicy
from deletion.domain.topics import NamespaceName

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
