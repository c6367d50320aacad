"""DeletionHandler's flow with fakes (pure logic): transient retries, unknowns, ownership."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from consumers.handler import DeletionHandler, Outcome
from consumers.received import not_before_seconds
from consumers.reconsume import Reconsumer, RetryPolicy
from core.clock import EpochSeconds, MonotonicSeconds
from core.errors import (
    DecodeError,
    LedgerStorageError,
    MetadataError,
    TransientBrokerError,
    TransientLedgerStorageError,
    TransientMetadataError,
    VersionConflictError,
)
from core.retry import TransientRetry
from deletion.domain import message
from deletion.domain.decision import SafetyMargins, pulsar_custom_metadata
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.offload_port import OffloadStorage
from deletion.domain.ports import ANY_VERSION, Deletion, LedgerRecord, LedgerStorage, TopicLedgers
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
            return TopicLedgers(topic, False, frozenset(), read_at)
        return TopicLedgers(topic, True, self.ledgers, read_at)


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
        )

    def handle(self, info: PendingDeleteLedgerInfo, **props: str) -> Any:
        return self.handler().handle(self.consumer, FakeMessage(message.encode(info), dict(props)))

    def handle_batch(self, *payloads: PendingDeleteLedgerInfo | bytes) -> list[Any]:
        encoded = [p if isinstance(p, bytes) else message.encode(p) for p in payloads]
        batch = [(self.consumer, FakeMessage(payload)) for payload in encoded]
        return self.handler().handle_batch(batch)


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
    received = Recent(payload, props)
    assert handler.due(received) == NOW - 30 + 60 + 10
    (result,) = handler.handle_batch([(rig.consumer, received)])
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


def test_a_ledger_above_the_largest_referenced_is_deleted_only_when_old(rig: Rig) -> None:
    young_ms = int((NOW - 600) * 1000)
    rig.storage.records[12] = LedgerRecord(12, _record(12).custom_metadata, young_ms, 1)
    rig.storage.records[13] = _record(13)  # created at the epoch: old
    results = rig.handle_batch(_info(12), _info(13))
    assert _outcomes(results) == ["reconsumed", "deleted"]
    assert results[0].reason.startswith("ledger 12 is too young (590s of 3600s)")
    assert rig.storage.deleted == [13]


def test_a_ledger_of_unknown_age_the_snapshot_cannot_vouch_for_is_kept(rig: Rig) -> None:
    rig.storage.records[12] = LedgerRecord(12, _record(12).custom_metadata, None, 1)
    (result,) = rig.handle_batch(_info(12))
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


# --- batches ---------------------------------------------------------------------------------


def _outcomes(results: list[Any]) -> list[str]:
    return [result.outcome.value for result in results]


def test_a_batch_reads_once_and_deletes_once(rig: Rig) -> None:
    rig.storage.records.update({6: _record(6), 7: _record(7)})
    results = rig.handle_batch(_info(3), _info(4), _info(5), _info(6), _info(7))
    assert _outcomes(results) == ["deleted", "deleted", "reconsumed", "deleted", "deleted"]
    assert rig.storage.batches == ["read 4", "delete 4"]
    assert sorted(rig.storage.deleted) == [3, 4, 6, 7]
    assert len(rig.consumer.acked) == 5  # the reconsumed one once its retry was sent


def test_the_same_ledger_twice_in_a_batch_is_deleted_once(rig: Rig) -> None:
    results = rig.handle_batch(_info(3), _info(3), _info(3))
    assert _outcomes(results) == ["deleted", "already_gone", "already_gone"]
    assert rig.storage.deleted == [3]
    assert rig.storage.batches == ["read 1", "delete 1"]


def test_a_corrupt_ledger_holds_back_no_other_in_its_batch(rig: Rig) -> None:
    rig.storage.records[6] = _record(6)
    rig.storage.corrupt.add(4)
    results = rig.handle_batch(_info(3), _info(4), _info(6))
    assert _outcomes(results) == ["deleted", "reconsumed", "deleted"]
    assert "cannot tell whether it is in use: corrupt metadata of ledger 4" in results[1].reason
    assert sorted(rig.storage.deleted) == [3, 6]
    # The batch read failed at once (a decode error is not transient); then one at a time.
    assert rig.storage.batches == ["read 3", "read 1", "read 1", "read 1", "delete 2"]


def test_a_transient_failure_in_a_batch_is_retried_not_reported(rig: Rig) -> None:
    rig.storage.records[6] = _record(6)
    rig.storage.failures = [TransientLedgerStorageError("blip")] * 2
    results = rig.handle_batch(_info(3), _info(4), _info(6))
    assert _outcomes(results) == ["deleted", "deleted", "deleted"]
    assert len(rig.sleeps) == 2


def test_hostile_and_undecodable_messages_do_not_spoil_their_batch(rig: Rig) -> None:
    elsewhere = TopicName(NamespaceName("other-tenant", "ns"), "orders")
    results = rig.handle_batch(_info(3), b"\x00garbage", _info(4, topic=elsewhere), _info(4))
    assert _outcomes(results) == ["deleted", "archived", "archived", "deleted"]
    assert "undecodable" in results[1].reason
    assert "outside namespace" in results[2].reason
    assert sorted(rig.storage.deleted) == [3, 4]


def test_a_failed_send_hands_back_only_its_own_message(rig: Rig) -> None:
    sent = rig.pool.send

    def refuse_retries(topic: str, *args: Any, **kwargs: Any) -> Future[Any]:
        if topic == NS.retry_topic:
            failed: Future[Any] = Future()
            failed.set_exception(TransientBrokerError("down"))
            return failed
        return sent(topic, *args, **kwargs)

    rig.pool.send = refuse_retries  # type: ignore[method-assign]
    results = rig.handle_batch(_info(3), _info(5), _info(4))
    assert isinstance(results[1], TransientBrokerError)
    assert _outcomes([results[0], results[2]]) == ["deleted", "deleted"]
    assert len(rig.consumer.acked) == 2  # not the one handed back
