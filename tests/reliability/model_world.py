"""The world around the model test's workers: a fake clock, a broker that is a dictionary of
unacked messages, producer pools whose sends can fail, and stores that can crash a worker at
any step, fail transiently, or see a ledger change between the read and the delete."""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import event
from hypothesis.errors import InvalidArgument

from core.errors import (
    TransientBrokerError,
    TransientLedgerStorageError,
    TransientMetadataError,
)
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.ports import (
    ANY_VERSION,
    InUseLedgers,
    LedgerRecord,
    LedgerStorage,
    Node,
    TopicLedgers,
)
from deletion.domain.topics import TopicName
from tests.reliability.raw_ledgers import SqliteLedgers

DELAY = 60.0  # sendDelaySeconds and reconsumeLaterSeconds
SKEW = 10.0  # clockSkewAllowanceSeconds
CRASH_STEPS = [
    "before in-use check",
    "before ownership read",
    "before delete",
    "after delete, before ack",
    "after send, before ack",
]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Crash(BaseException):
    """A killed worker: nothing may catch it."""


class Trap:
    """Springs once at its step: the worker dies there."""

    def __init__(self) -> None:
        self.step: str | None = None

    def spring(self, step: str) -> None:
        if self.step == step:
            self.step = None
            raise Crash(step)


# --- the broker: messages on topics, unacked until acked ----------------------------------


class MessageId:
    def __init__(self, n: int) -> None:
        self.n = n

    def ledger_id(self) -> int:
        return self.n

    def entry_id(self) -> int:
        return 0

    def partition(self) -> int:
        return 0

    def batch_index(self) -> int:
        return -1


@dataclass(eq=False)
class Message:
    n: int
    topic: str
    payload: bytes
    props: dict[str, str]
    published_ms: int
    key: str

    def data(self) -> bytes:
        return self.payload

    def properties(self) -> dict[str, str]:
        return dict(self.props)

    def publish_timestamp(self) -> int:
        return self.published_ms

    def topic_name(self) -> str:
        return self.topic

    def message_id(self) -> MessageId:
        return MessageId(self.n)

    def partition_key(self) -> str:
        return self.key

    def due(self) -> float:
        """When the worker's early-delivery gate lets it through: its delay, at least the
        send delay, plus the skew allowance."""
        delay = props.delay_ms(self.props)
        return self.published_ms / 1000 + max(DELAY, (delay or 0) / 1000) + SKEW


@dataclass
class Broker:
    clock: Clock
    numbers: itertools.count[int] = field(default_factory=itertools.count)
    unacked: dict[int, Message] = field(default_factory=dict)
    acked: dict[int, Message] = field(default_factory=dict)
    archived: list[Message] = field(default_factory=list)

    def publish(self, topic: str, payload: bytes, properties: dict[str, str], key: str) -> None:
        sent = Message(
            next(self.numbers), topic, payload, properties, int(self.clock() * 1000), key
        )
        if topic.endswith("__ledger_deletion_archive"):
            self.archived.append(sent)
        else:
            self.unacked[sent.n] = sent

    def due(self) -> list[Message]:
        return [m for m in self.unacked.values() if m.due() <= self.clock()]


class Pool:
    """ProducerPool's contract on the fake broker: the next `fail_next` sends fail, and
    `trap` kills after a send, before the ack."""

    def __init__(self, broker: Broker, trap: Trap | None = None) -> None:
        self._broker, self._trap = broker, trap
        self.fail_next = 0

    def send(
        self,
        topic: str,
        payload: bytes,
        properties: Any,
        key: str | None = None,
        delay_seconds: float = 0.0,
        ordering_key: str | None = None,
    ) -> Future[Any]:
        result: Future[Any] = Future()
        if self.fail_next:
            self.fail_next -= 1
            result.set_exception(TransientBrokerError("injected"))
            return result
        self._broker.publish(topic, payload, dict(properties), key or "")
        result.set_result("id")
        if self._trap is not None:
            self._trap.spring("after send, before ack")
        return result

    def __contains__(self, topic: object) -> bool:
        """Every topic's producer is open: a failed send failed at the message."""
        return True


class Consumer:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def acknowledge(self, received: Message) -> None:
        self._broker.unacked.pop(received.n, None)
        self._broker.acked[received.n] = received

    def negative_acknowledge(self, received: Message) -> None:
        pass  # it simply stays unacked


# --- stores that can crash or fail ---------------------------------------------------------


class Born:
    """Creates ledgers, remembering when: the ledger store's ctime, by the store's clock,
    which runs as far behind ours as the skew allowance allows (ledgers look older)."""

    def __init__(self, real: SqliteLedgerStorage, clock: Clock, behind: float = SKEW) -> None:
        self._real, self._clock, self._behind = real, clock, behind
        self.ctime_ms: dict[int, int] = {}

    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int:
        ledger_id = self._real.create_ledger(custom_metadata)
        self.ctime_ms[ledger_id] = int((self._clock() - self._behind) * 1000)
        return ledger_id


class Storage(LedgerStorage):
    """The real SQLite ledger store, with ctimes on the fake clock. With `changing` set,
    someone else changes each ledger right after the worker has read it."""

    def __init__(
        self,
        real: SqliteLedgerStorage,
        born: Born,
        trap: Trap,
        faults: Counter[str],
        raw: SqliteLedgers,
    ) -> None:
        self._real, self._born, self._trap, self._faults, self._raw = real, born, trap, faults, raw
        self.changing = False
        self.changed: list[int] = []

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        self._trap.spring("before ownership read")
        if self._take("ledger"):
            raise TransientLedgerStorageError("injected")
        record = self._real.ledger(ledger_id)
        if record is not None and self.changing:
            self._raw.bump_version(ledger_id)
            self.changed.append(ledger_id)
        if record is None:
            return None
        return replace(record, ctime_ms=self._born.ctime_ms.get(ledger_id, record.ctime_ms))

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        self._trap.spring("before delete")
        deleted = self._real.delete_ledger(ledger_id, expected_version)
        self._trap.spring("after delete, before ack")
        if self._take("delete"):
            raise TransientLedgerStorageError("injected after the delete")
        return deleted

    def _take(self, kind: str) -> bool:
        if self._faults[kind] > 0:
            self._faults[kind] -= 1
            return True
        return False

    def close(self) -> None:
        pass


class Metadata:
    def __init__(self, real: SqliteMetadataStore, trap: Trap, faults: Counter[str]) -> None:
        self._real, self._trap, self._faults = real, trap, faults

    def get(self, path: str) -> Node | None:
        self._trap.spring("before in-use check")
        if self._faults["metadata"] > 0:
            self._faults["metadata"] -= 1
            raise TransientMetadataError("injected")
        return self._real.get(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


# --- what happened, for --hypothesis-show-statistics ---------------------------------


def id_of(received: Message) -> int:
    return received.n


def topic_of(received: Message) -> TopicName:
    return message.decode(received.payload).topic_name


CATEGORIES = [  # reason text -> what a handling came to
    ("gave up", "exhausted its retries"),
    ("still referenced", "referenced"),
    ("predates", "snapshot older than the due time"),
    ("too young", "too young for the age rule"),
    ("unreferenced and", "old enough for the age rule"),
    ("cannot tell", "unknown"),
    ("changed while", "changed between read and delete"),
    ("outside namespace", "another namespace's"),
    ("metadata", "not the topic's ledger"),
    ("cursor ledger", "not the topic's ledger"),
]


def note(what: str) -> None:
    with contextlib.suppress(InvalidArgument):  # outside a hypothesis test: the spelt-out ones
        event(what)


class Snapshots:
    """A worker's in-use source. Notes a fetch while the previous snapshot of the topic is
    still within the cache's TTL: the cache found it older than a message's due time."""

    def __init__(self, real: InUseLedgers, clock: Clock, ttl: float) -> None:
        self._real, self._clock, self._ttl = real, clock, ttl
        self._last: dict[TopicName, float] = {}

    def fetch(self, topic: TopicName) -> TopicLedgers:
        last = self._last.get(topic)
        if last is not None and self._clock() - last < self._ttl:
            note("a cached snapshot older than the due time was read again")
        snapshot = self._real.fetch(topic)
        self._last[topic] = self._clock()
        return snapshot
