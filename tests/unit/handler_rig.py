"""The handler's test rig: fakes of the broker side (message, consumer, producer pool) and
of the stores (an in-use source and a ledger store that fail on demand), shared by
test_handler, test_handler_batch and test_deleter."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from consumers.handler import DeletionHandler
from consumers.reconsume import Reconsumer, RetryPolicy
from core.clock import EpochSeconds, MonotonicSeconds
from core.errors import DecodeError, LedgerStorageError, VersionConflictError
from core.retry import TransientRetry
from deletion.domain import message
from deletion.domain.decision import SafetyMargins, pulsar_custom_metadata
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.offload_port import OffloadStorage
from deletion.domain.outcome import Result
from deletion.domain.ports import (
    ANY_VERSION,
    Creators,
    Deletion,
    LedgerRecord,
    LedgerStorage,
    Session,
    TopicLedgers,
)
from deletion.domain.topics import NamespaceName, TopicName

NOW = 1_000_000.0
NS = NamespaceName("tenant", "ns")
TOPIC = TopicName(NS, "orders")


@dataclass
class FakeMessage:
    payload: bytes
    props: dict[str, str] = field(default_factory=dict)

    def data(self) -> bytes:
        return self.payload

    def properties(self) -> dict[str, str]:
        return dict(self.props)

    def publish_timestamp(self) -> int:
        return int((NOW - 100) * 1000)

    def topic_name(self) -> str:
        return f"{NS.deletion_topic}-partition-2"

    def message_id(self) -> Any:
        return FakeId()

    def partition_key(self) -> str:
        return "k"


class FakeId:
    def ledger_id(self) -> int:
        return 3

    def entry_id(self) -> int:
        return 9

    def partition(self) -> int:
        return 2

    def batch_index(self) -> int:
        return -1


@dataclass
class FakeConsumer:
    acked: list[Any] = field(default_factory=list)

    def acknowledge(self, received: Any) -> None:
        self.acked.append(received)

    def negative_acknowledge(self, received: Any) -> None:
        raise AssertionError("not expected")


@dataclass
class FakePool:
    sent: list[tuple[str, bytes, dict[str, str]]] = field(default_factory=list)

    def send(
        self,
        topic: str,
        payload: bytes,
        properties: Any,
        key: Any = None,
        delay_seconds: float = 0.0,
        ordering_key: str | None = None,
    ) -> Future[Any]:
        self.sent.append((topic, payload, dict(properties)))
        done: Future[Any] = Future()
        done.set_result("id")
        return done


@dataclass
class FlakySource:
    """The in-use ledgers of TOPIC (no other topic has a managed ledger), read at
    `fetched_at`; fails `failures` times first."""

    ledgers: frozenset[int]
    failures: list[Exception] = field(default_factory=list)
    calls: int = 0
    fetched_at: float = NOW

    def fetch(self, topic: TopicName) -> TopicLedgers:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        read_at = EpochSeconds(self.fetched_at)
        if topic != TOPIC:
            return TopicLedgers(topic, False, frozenset(), read_at, creators=Creators(None, {}))
        # Every ledger here is a data ledger: the newest is what the managed ledger recorded.
        creators = Creators(max(self.ledgers, default=None), {})
        return TopicLedgers(topic, True, self.ledgers, read_at, creators=creators)


@dataclass
class FlakyStorage(LedgerStorage):
    records: dict[int, LedgerRecord]
    failures: list[Exception] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    corrupt: set[int] = field(default_factory=set)
    batches: list[str] = field(default_factory=list)
    # Rewritten by someone else right after the janitor read them (once).
    rewritten_after_read: set[int] = field(default_factory=set)
    refused: set[int] = field(default_factory=set)  # deleting these fails for good

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        if self.failures:
            raise self.failures.pop(0)
        if ledger_id in self.corrupt:
            raise DecodeError(f"corrupt metadata of ledger {ledger_id}")
        return self.records.get(ledger_id)

    def ledgers(self, ledger_ids: Sequence[int]) -> dict[int, LedgerRecord | None]:
        self.batches.append(f"read {len(ledger_ids)}")
        found = super().ledgers(ledger_ids)
        for ledger_id in self.rewritten_after_read & found.keys() & self.records.keys():
            record = self.records[ledger_id]
            self.records[ledger_id] = replace(record, version=record.version + 1)
            self.rewritten_after_read.discard(ledger_id)
        return found

    def delete_ledgers(self, versions: Mapping[int, int]) -> dict[int, Deletion]:
        self.batches.append(f"delete {len(versions)}")
        return super().delete_ledgers(versions)

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        if self.failures:
            raise self.failures.pop(0)
        if ledger_id in self.refused:
            raise LedgerStorageError(f"deleting ledger {ledger_id}: permission denied")
        record = self.records.get(ledger_id)
        if record is not None and expected_version not in (ANY_VERSION, record.version):
            # As the real stores do: a versioned delete of a record that changed is refused.
            raise VersionConflictError(f"ledger {ledger_id} is at version {record.version}")
        self.deleted.append(ledger_id)
        return self.records.pop(ledger_id, None) is not None

    def close(self) -> None:
        pass


def _record(ledger_id: int, topic: TopicName = TOPIC) -> LedgerRecord:
    metadata = pulsar_custom_metadata(topic, LedgerComponent.MANAGED_LEDGER)
    return LedgerRecord(ledger_id, metadata, ctime_ms=0, version=1)


@dataclass
class Rig:
    source: FlakySource
    storage: FlakyStorage
    pool: FakePool = field(default_factory=FakePool)
    consumer: FakeConsumer = field(default_factory=FakeConsumer)
    sleeps: list[float] = field(default_factory=list)
    margins: SafetyMargins = field(
        default_factory=lambda: SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=3600)
    )
    offload: OffloadStorage | None = None
    # Shared by every handler when set; otherwise each handler starts with an empty cache.
    cache: InUseLedgersCache | None = None
    # The stores' connection as the deleter sees it; the ledger store's (always) if None.
    session: Callable[[], Session] | None = None

    def new_cache(self) -> InUseLedgersCache:
        return InUseLedgersCache(self.source, ttl=600, clock=lambda: MonotonicSeconds(NOW))

    def handler(self) -> DeletionHandler:
        reconsumer = Reconsumer(self.pool, RetryPolicy(600, 10), clock=lambda: NOW)  # type: ignore[arg-type]
        retry = TransientRetry(attempts=4, sleep=self.sleeps.append)
        return DeletionHandler(
            self.cache or self.new_cache(),
            self.storage,
            reconsumer,
            self.margins,
            retry,
            clock=lambda: EpochSeconds(NOW),
            offload=self.offload,
            session=self.session,
        )

    def handle(self, info: PendingDeleteLedgerInfo, **props: str) -> Result:
        handler = self.handler()
        received = FakeMessage(message.encode(info), dict(props))
        return handler.handle(handler.arrival(self.consumer, received))

    def handle_batch(self, *payloads: PendingDeleteLedgerInfo | bytes) -> list[Any]:
        handler = self.handler()
        encoded = [p if isinstance(p, bytes) else message.encode(p) for p in payloads]
        return handler.handle_batch(
            [handler.arrival(self.consumer, FakeMessage(payload)) for payload in encoded]
        )


def _info(ledger_id: int, topic: TopicName = TOPIC, check: bool = True) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(
        topic,
        LedgerComponent.MANAGED_LEDGER,
        LedgerType.LEDGER,
        ledger_id,
        check_ledger_still_in_use=check,
    )


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield Rig(FlakySource(frozenset({5, 9})), FlakyStorage({3: _record(3), 4: _record(4)}))


def _outcomes(results: list[Any]) -> list[str]:
    return [result.outcome.value for result in results]
