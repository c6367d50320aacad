"""Phase one's contract, as pure logic: the caller's commit runs only once EVERY send was
acknowledged. A send never answered (its future neither completes nor fails) and one failed
send among several are both "not enqueued", and the commit never runs.

The pool is a fake whose futures the test answers, fails or leaves unanswered; the wait is
cut to a fraction of a second, so nothing here sleeps longer than that."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from config import ServiceConfiguration
from core.errors import BrokerError, EnqueueError
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.namespaces import NamespaceRegistry
from deletion.domain.topics import NamespaceName, TopicName
from producers.opening import close_client, open_phase_one
from producers.phase_one import PhaseOne

WAIT = 0.2  # phase one's wait for the acknowledgements, cut short for the tests
ORDERS = TopicName(NamespaceName("shop", "orders"), "t")
PAYMENTS = TopicName(NamespaceName("shop", "payments"), "t")


def pending(ledger_id: int, topic: TopicName = ORDERS) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(
        topic, LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, ledger_id
    )


class FakePool:
    """ProducerPool's contract, keyed by ledger (the message key): acknowledged at once,
    failed at once, never answered, or refused before any producer (a namespace whose
    set-up fails)."""

    def __init__(self) -> None:
        self.unanswered: set[int] = set()
        self.failing: set[int] = set()
        self.unprepared: set[str] = set()  # deletion topics whose producer cannot be made
        self.producers: set[str] = set()
        self.tries: list[str] = []
        self.futures: dict[int, Future[Any]] = {}

    def send(
        self,
        topic: str,
        payload: bytes,
        properties: Mapping[str, str],
        key: str | None = None,
        delay_seconds: float = 0.0,
        ordering_key: str | None = None,
    ) -> Future[Any]:
        assert key is not None
        ledger = int(key)
        self.tries.append(topic)
        future: Future[Any] = Future()
        self.futures[ledger] = future
        if topic in self.unprepared:
            future.set_exception(BrokerError(f"create producer for {topic}: Timeout"))
            return future
        self.producers.add(topic)
        if ledger in self.failing:
            future.set_exception(BrokerError(f"send to {topic} failed: Result.Timeout"))
        elif ledger not in self.unanswered:
            future.set_result(f"id-{ledger}")
        return future  # an unanswered one: neither completes nor fails

    def __contains__(self, topic: object) -> bool:
        return topic in self.producers


@pytest.fixture
def pool() -> FakePool:
    return FakePool()


@pytest.fixture
def phase_one(pool: FakePool, tmp_path: Path) -> Iterator[PhaseOne]:
    store = SqliteMetadataStore(tmp_path / "registry.db")
    yield PhaseOne(pool, NamespaceRegistry(store), 60, timeout_seconds=WAIT)  # type: ignore[arg-type]
    store.close()


class Commit:
    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> str:
        self.runs += 1
        return "committed"


def test_a_send_never_answered_is_not_enqueued_and_the_commit_never_runs(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    pool.unanswered = {7}
    commit = Commit()
    started = time.monotonic()
    with pytest.raises(EnqueueError) as refused:
        phase_one.enqueue_then_commit([pending(7)], commit)
    assert commit.runs == 0
    assert time.monotonic() - started >= WAIT  # it waited for the acknowledgement, in vain
    assert f"LEDGER 7 of {ORDERS}: not acknowledged within {WAIT:g} s" in str(refused.value)
    assert not pool.futures[7].done()  # truly unanswered: no failure told phase one


def test_one_unanswered_send_among_three_stops_the_commit(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    pool.unanswered = {2}
    commit = Commit()
    with pytest.raises(EnqueueError) as refused:
        phase_one.enqueue_then_commit([pending(1), pending(2), pending(3)], commit)
    assert commit.runs == 0
    listed = str(refused.value).splitlines()[1:]
    assert listed == [f"MANAGED_LEDGER LEDGER 2 of {ORDERS}: not acknowledged within {WAIT:g} s"]


def test_each_fate_is_told_an_unanswered_one_without_a_message_id(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    pool.unanswered, pool.failing = {2}, {3}
    sent = phase_one.enqueue_each([pending(1), pending(2), pending(3)])
    assert [(s.info.ledger_id, s.enqueued, s.message_id) for s in sent] == [
        (1, True, "id-1"),
        (2, False, None),
        (3, False, None),
    ]
    assert sent[1].error == f"not acknowledged within {WAIT:g} s"
    assert sent[2].error is not None and "Result.Timeout" in sent[2].error


def test_one_failed_send_among_three_stops_the_commit_and_is_named(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    pool.failing = {12}
    commit = Commit()
    with pytest.raises(EnqueueError) as refused:
        phase_one.enqueue_then_commit([pending(11), pending(12), pending(13)], commit)
    assert commit.runs == 0
    message = str(refused.value)
    assert message.startswith("phase one failed; metadata must not change:")
    (listed,) = message.splitlines()[1:]
    assert listed.startswith(f"MANAGED_LEDGER LEDGER 12 of {ORDERS}: send to ")
    assert pool.futures[11].result() == "id-11" and pool.futures[13].result() == "id-13"


def test_enqueue_raises_for_one_failed_send_among_three(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    pool.failing = {21}
    with pytest.raises(EnqueueError, match="LEDGER 21 of"):
        phase_one.enqueue([pending(21), pending(22), pending(23)])


def test_the_commit_runs_once_every_send_is_acknowledged_late_or_not(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    pool.unanswered = {32}
    order: list[str] = []

    def commit() -> str:
        order.append("commit")
        return "committed"

    def answer_late() -> None:
        while 32 not in pool.futures:
            time.sleep(0.001)
        order.append("ack 32")
        pool.futures[32].set_result("id-32")

    late = threading.Thread(target=answer_late)
    late.start()
    assert phase_one.enqueue_then_commit([pending(31), pending(32)], commit) == "committed"
    late.join()
    assert order == ["ack 32", "commit"]


def test_a_namespace_whose_producer_cannot_be_made_is_tried_once_per_call(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    """A broker that does not answer costs a time-out per try: the other ledgers of that
    namespace share the first one's failure; another namespace is still tried."""
    pool.unprepared = {ORDERS.namespace.deletion_topic}
    infos = [pending(41), pending(42, PAYMENTS), pending(43), pending(44)]
    sent = phase_one.enqueue_each(infos)
    assert [s.enqueued for s in sent] == [False, True, False, False]
    assert {s.error for s in sent if not s.enqueued} == {
        f"create producer for {ORDERS.namespace.deletion_topic}: Timeout"
    }
    assert pool.tries == [ORDERS.namespace.deletion_topic, PAYMENTS.namespace.deletion_topic]
    phase_one.enqueue_each([pending(45)])  # a later call tries again
    assert pool.tries[-1] == ORDERS.namespace.deletion_topic


def test_a_failed_message_does_not_stop_the_next_one_of_its_namespace(
    pool: FakePool, phase_one: PhaseOne
) -> None:
    """Its producer exists: the failure was the message's, not the namespace's."""
    pool.failing = {51}
    sent = phase_one.enqueue_each([pending(51), pending(52)])
    assert [s.enqueued for s in sent] == [False, True]
    assert len(pool.tries) == 2


def test_closing_phase_one_does_not_raise_when_the_client_is_closed_already(tmp_path: Path) -> None:
    """Against a broker that stopped answering, a producer's close times out and the
    client's close then answers AlreadyClosed (seen on pulsar-lite stopped with SIGSTOP):
    `enqueue` printed `error: AlreadyClosed` instead of the ledgers it had enqueued. Here the
    client is closed first, so that its close at the end answers the same, every time: a
    client closed already is closed, and nothing is said of it."""
    config = ServiceConfiguration().with_overrides(
        broker_service_url="pulsar://127.0.0.1:9", metadata_store_url=f"sqlite:{tmp_path}/m.db"
    )
    store = SqliteMetadataStore(tmp_path / "m.db")
    with capture_logs() as logged, open_phase_one(config, store, tmp_path / "client.log") as parts:
        parts.client.close()
    store.close()
    assert [line for line in logged if line["event"] == "closing the broker client failed"] == []


def test_closing_phase_one_says_a_close_the_broker_does_not_answer() -> None:
    """A close that is not answered within its wait is said, and the command goes on."""

    class Unanswered:
        def close_async(self, callback: object) -> None:
            pass

    with capture_logs() as logged:
        close_client(Unanswered(), 0.05)
    (said,) = [line for line in logged if line["event"] == "closing the broker client failed"]
    assert said["log_level"] == "warning" and said["error"] == "no answer within 0.05 s"
