"""A model-based test of the whole protocol (hypothesis stateful): random interleavings of

- producers that enqueue then commit, that crash between the two, whose send fails, or
  that retry a trim they crashed in; ledger roll-overs; cursor rotations (also crashing);
- two workers with their own TTL caches on one fake clock, so caches go stale;
- deliveries in any order, one at a time or in batches (with duplicates inside a batch),
  duplicate deliveries of acked messages, crashes of a worker at every step of phase two
  (then replaced, cache and all), transient store failures;
- messages naming another tenant's ledger, or a ledger of the wrong component;

checking the invariant after every step: no ledger that metadata references is gone, no
ledger was deleted that no message released, nothing was deleted twice. At the end, with
time run forward, every message is settled: every released ledger deleted or archived, every
unreleased one archived and intact, nothing left unacked.

The real DeletionHandler, PhaseOne, Reconsumer, TTL cache, metadata reader and both SQLite
adapters run here; the broker is a dictionary of unacked messages and the clock is fake.
"""

from __future__ import annotations

import itertools
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from consumers.handler import DeletionHandler
from consumers.reconsume import Reconsumer, RetryPolicy
from deletion import message
from deletion import message_properties as props
from deletion.decision import SafetyMargins, pulsar_custom_metadata
from deletion.in_use import InUseLedgersCache
from deletion.ledgers.sqlite import SqliteLedgerStorage
from deletion.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.namespaces import NamespaceRegistry
from deletion.ports import ANY_VERSION, LedgerRecord, LedgerStorage, Node
from deletion.pulsar_metadata import ManagedLedgerWriter, MetadataInUseLedgers
from deletion.stores.sqlite import SqliteMetadataStore
from deletion.topics import NamespaceName, TopicName
from deletion.transient import TransientRetry
from ledger_janitor.errors import (
    EnqueueError,
    TransientBrokerError,
    TransientLedgerStorageError,
    TransientMetadataError,
)
from producers import PhaseOne

from .support import scaled

pytestmark = pytest.mark.timeout(scaled(120, 1800))

DELAY = 60.0  # sendDelaySeconds and reconsumeLaterSeconds
TTL = 600.0
MAX_RECONSUMES = 3
NAMESPACES = [NamespaceName("alpha", "ns"), NamespaceName("beta", "ns")]
CRASH_STEPS = [
    "before in-use check",
    "before ownership read",
    "before delete",
    "after delete, before ack",
    "after send, before ack",
]
TOPICS = [TopicName(NAMESPACES[0], "orders"), TopicName(NAMESPACES[1], "audit-partition-1")]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

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
        delay = props.delay_ms(self.props)
        return self.published_ms / 1000 + (DELAY if delay is None else delay / 1000)


@dataclass
class Broker:
    clock: Clock
    numbers: itertools.count[int] = field(default_factory=itertools.count)
    unacked: dict[int, Message] = field(default_factory=dict)
    acked: dict[int, Message] = field(default_factory=dict)
    archived: list[Message] = field(default_factory=list)
    fail_sends: int = 0

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
    """ProducerPool's contract on the fake broker; `trap` kills after a send, before the ack."""

    def __init__(self, broker: Broker, trap: Trap | None = None) -> None:
        self._broker, self._trap = broker, trap

    def send(
        self,
        topic: str,
        payload: bytes,
        properties: Any,
        key: str | None = None,
        delay_seconds: float = 0.0,
    ) -> Future[Any]:
        result: Future[Any] = Future()
        if self._broker.fail_sends:
            self._broker.fail_sends -= 1
            result.set_exception(TransientBrokerError("injected"))
            return result
        self._broker.publish(topic, payload, dict(properties), key or "")
        result.set_result("id")
        if self._trap is not None:
            self._trap.spring("after send, before ack")
        return result


class Consumer:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def acknowledge(self, received: Message) -> None:
        self._broker.unacked.pop(received.n, None)
        self._broker.acked[received.n] = received

    def negative_acknowledge(self, received: Message) -> None:
        pass  # it simply stays unacked


# --- stores that can crash or fail ---------------------------------------------------------


class Storage(LedgerStorage):
    def __init__(self, real: SqliteLedgerStorage, trap: Trap, faults: Counter[str]) -> None:
        self._real, self._trap, self._faults = real, trap, faults

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        self._trap.spring("before ownership read")
        if self._take("ledger"):
            raise TransientLedgerStorageError("injected")
        return self._real.ledger(ledger_id)

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


# --- the machine ---------------------------------------------------------------------------


class Protocol(RuleBasedStateMachine):
    ledgers_to_trim = Bundle("ledgers_to_trim")
    crashed_trims = Bundle("crashed_trims")

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.metadata = SqliteMetadataStore(":memory:")
        self.storage = SqliteLedgerStorage(":memory:")
        self.writer = ManagedLedgerWriter(self.metadata)
        self.broker = Broker(self.clock)
        self.faults: Counter[str] = Counter()
        self.traps = [Trap(), Trap()]
        self.workers = [self._worker(0), self._worker(1)]
        self.phase_one = PhaseOne(
            Pool(self.broker),  # type: ignore[arg-type]
            NamespaceRegistry(self.metadata),
            send_delay_seconds=DELAY,
        )
        self.cursors: dict[TopicName, int] = {}
        self.released: set[int] = set()  # enqueued, then the commit dropped them
        self.enqueued: set[int] = set()  # every ledger a message was sent for
        self.hostile: set[int] = set()  # named by a message that must never delete it
        self.leaked: set[tuple[TopicName, int]] = set()

    def _worker(self, index: int) -> DeletionHandler:
        trap = self.traps[index]
        metadata = Metadata(self.metadata, trap, self.faults)
        cache = InUseLedgersCache(MetadataInUseLedgers(metadata, self.clock), TTL, self.clock)
        reconsumer = Reconsumer(
            Pool(self.broker, trap),  # type: ignore[arg-type]
            RetryPolicy(delay_seconds=DELAY, max_reconsume_times=MAX_RECONSUMES),
            self.clock,
        )
        return DeletionHandler(
            cache,
            Storage(self.storage, trap, self.faults),
            reconsumer,
            SafetyMargins(send_delay=DELAY, clock_skew=0, min_ledger_age=0),
            retry=TransientRetry(attempts=3, sleep=lambda _: None),
            clock=self.clock,  # type: ignore[arg-type]
        )

    def _new_ledger(self, topic: TopicName, component: LedgerComponent) -> int:
        return self.storage.create_ledger(pulsar_custom_metadata(topic, component))

    def _referenced(self, topic: TopicName) -> list[int]:
        current = self.writer.read(topic)
        return [] if current is None else [li.ledgerId for li in current[0].ledgerInfo]

    # --- setup and producers ---------------------------------------------------------

    @initialize(target=ledgers_to_trim)
    def topics(self) -> Any:
        created = []
        for topic in TOPICS:
            ids = [self._new_ledger(topic, LedgerComponent.MANAGED_LEDGER) for _ in range(3)]
            self.writer.write(topic, ids, version=None)
            self.cursors[topic] = self._new_ledger(topic, LedgerComponent.MANAGED_CURSOR)
            self.writer.write_cursor(topic, "sub", self.cursors[topic])
            created += [(topic, i) for i in ids[:-1]]
        return multiple(*created)

    @rule(target=ledgers_to_trim, topic=st.sampled_from(TOPICS))
    def roll_over(self, topic: TopicName) -> tuple[TopicName, int]:
        """The broker adds a ledger: its id is above anything a cache has seen."""
        new = self._new_ledger(topic, LedgerComponent.MANAGED_LEDGER)
        current = self.writer.read(topic)
        assert current is not None
        self.writer.write(topic, [*self._referenced(topic), new], current[1])
        return topic, new

    @rule(trim=consumes(ledgers_to_trim), check=st.booleans())
    def enqueue_then_commit(self, trim: tuple[TopicName, int], check: bool = True) -> None:
        topic, ledger = trim
        self.phase_one.enqueue_then_commit(
            [pending(topic, ledger, check)], lambda: self.writer.remove_ledgers(topic, [ledger])
        )
        self.enqueued.add(ledger)
        self.released.add(ledger)

    @rule(target=crashed_trims, trim=consumes(ledgers_to_trim), check=st.booleans())
    def enqueue_then_crash(self, trim: tuple[TopicName, int], check: bool) -> tuple[TopicName, int]:
        """Sent, and the producer dies before its commit: the ledger stays referenced. Even
        with checkLedgerStillInUse=false, the worker must see that on fresh metadata."""
        topic, ledger = trim
        self.phase_one.enqueue([pending(topic, ledger, check)])
        self.enqueued.add(ledger)
        return trim

    @rule(trim=consumes(crashed_trims))
    def retry_the_crashed_trim(self, trim: tuple[TopicName, int]) -> None:
        """The broker trims again later: a second message for the same ledger."""
        self.enqueue_then_commit(trim)

    @rule(trim=consumes(ledgers_to_trim))
    def leak(self, trim: tuple[TopicName, int]) -> None:
        """A ledger dropped from metadata with no phase one (a legacy leak, issue #13238):
        unreferenced, but nobody asked for its deletion, so no message may delete it."""
        topic, ledger = trim
        self.writer.remove_ledgers(topic, [ledger])
        self.leaked.add((topic, ledger))

    @rule(trim=ledgers_to_trim)
    def send_fails(self, trim: tuple[TopicName, int]) -> None:
        topic, ledger = trim
        before = self._referenced(topic)
        self.broker.fail_sends = 1
        info = PendingDeleteLedgerInfo(
            topic, LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, ledger
        )
        try:
            self.phase_one.enqueue_then_commit(
                [info], lambda: self.writer.remove_ledgers(topic, [ledger])
            )
        except EnqueueError:
            pass
        else:
            raise AssertionError("a failed send let the commit run")
        assert self._referenced(topic) == before

    @rule(topic=st.sampled_from(TOPICS), crash=st.booleans(), check=st.booleans())
    def rotate_cursor(self, topic: TopicName, crash: bool, check: bool = True) -> None:
        """Cursor-ledger rotation: new ledger, phase one for the old one, then the switch."""
        old, new = self.cursors[topic], self._new_ledger(topic, LedgerComponent.MANAGED_CURSOR)
        info = PendingDeleteLedgerInfo(
            topic, LedgerComponent.MANAGED_CURSOR, LedgerType.LEDGER, old, None, check
        )
        self.enqueued.add(old)
        if crash:  # enqueued, but the cursor still points at the old ledger
            self.phase_one.enqueue([info])
            return
        self.phase_one.enqueue_then_commit(
            [info], lambda: self.writer.write_cursor(topic, "sub", new)
        )
        self.cursors[topic] = new
        self.released.add(old)

    @rule(topic=st.sampled_from(TOPICS), worker=st.integers(0, 1), check=st.booleans())
    def busy_cursor(self, topic: TopicName, worker: int, check: bool) -> None:
        """A worker has just looked the topic up; then its cursor rotates twice within the
        cache's TTL, and the second rotation's producer dies before its commit. The ledger
        that message names is newer than anything the worker's snapshot knows, and still
        referenced: only the staleness rule (or, unchecked, a fresh read) can tell."""
        self.warm_cache(worker, topic)
        self.rotate_cursor(topic, crash=False)
        self.rotate_cursor(topic, crash=True, check=check)

    @rule(data=st.data(), cross_namespace=st.booleans())
    def hostile_message(self, data: st.DataObject, cross_namespace: bool) -> None:
        """A ledger (referenced or leaked) named on another namespace's deletion topic, or
        under a component that is not its own: archived, and never deleted by it."""
        topic = data.draw(st.sampled_from(TOPICS))
        cursor = self.cursors[topic]
        leaked = sorted(ledger for owner, ledger in self.leaked if owner == topic)
        victim = data.draw(st.sampled_from([*self._referenced(topic), cursor, *leaked]))
        own = LedgerComponent.MANAGED_CURSOR if victim == cursor else LedgerComponent.MANAGED_LEDGER
        if cross_namespace:
            component = own
            arrives_on = next(ns for ns in NAMESPACES if ns != topic.namespace)
        else:
            component = data.draw(st.sampled_from([c for c in LedgerComponent if c is not own]))
            arrives_on = topic.namespace
        info = PendingDeleteLedgerInfo(topic, component, LedgerType.LEDGER, victim)
        self.broker.publish(arrives_on.deletion_topic, message.encode(info), {}, "")
        self.hostile.add(victim)

    # --- time, failures, workers -----------------------------------------------------

    @rule(seconds=st.sampled_from([1.0, 30.0, DELAY, DELAY + 1, TTL, TTL + 1, 3600.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds

    @rule(worker=st.integers(0, 1), topic=st.sampled_from(TOPICS))
    def warm_cache(self, worker: int, topic: TopicName) -> None:
        """The worker looks the topic up, as any message of that topic makes it do: from now
        on its snapshot ages while the metadata moves on."""
        try:
            self.workers[worker].in_use.lookup(topic)
        except (Crash, TransientMetadataError):
            self.workers[worker] = self._worker(worker)

    @rule(kind=st.sampled_from(["metadata", "ledger", "delete"]), count=st.integers(1, 4))
    def transient_failures(self, kind: str, count: int) -> None:
        self.faults[kind] += count

    @precondition(lambda self: self.broker.due())
    @rule(data=st.data(), worker=st.integers(0, 1))
    def deliver(self, data: st.DataObject, worker: int) -> None:
        received = data.draw(st.sampled_from(self.broker.due()))
        self._handle(worker, received)

    @precondition(lambda self: self.broker.acked)
    @rule(data=st.data(), worker=st.integers(0, 1))
    def deliver_a_duplicate(self, data: st.DataObject, worker: int) -> None:
        """At-least-once: an acked message comes again (a lost ack, a broker restart)."""
        received = data.draw(st.sampled_from(sorted(self.broker.acked.values(), key=id_of)))
        self._handle(worker, received)

    @precondition(lambda self: self.broker.due())
    @rule(
        data=st.data(),
        worker=st.integers(0, 1),
        step=st.sampled_from(CRASH_STEPS),
    )
    def crash_mid_handling(self, data: st.DataObject, worker: int, step: str) -> None:
        received = data.draw(st.sampled_from(self.broker.due()))
        self.traps[worker].step = step
        self._handle(worker, received)
        self.traps[worker].step = None

    @precondition(lambda self: self.broker.due())
    @rule(
        data=st.data(),
        worker=st.integers(0, 1),
        step=st.one_of(st.none(), st.sampled_from(CRASH_STEPS)),
    )
    def deliver_a_batch(self, data: st.DataObject, worker: int, step: str | None) -> None:
        """The worker takes what is waiting as one batch (one pipelined read, one pipelined
        delete): due messages, acked ones coming again, the same one twice; perhaps dying
        part-way through it."""
        waiting = [*self.broker.due(), *sorted(self.broker.acked.values(), key=id_of)]
        everything = st.just(self.broker.due())  # a backlog: the queue taken whole
        batch = data.draw(everything | st.lists(st.sampled_from(waiting), min_size=2, max_size=6))
        self.traps[worker].step = step
        try:
            self.workers[worker].handle_batch([(Consumer(self.broker), m) for m in batch])
        except Crash:
            self.workers[worker] = self._worker(worker)
        finally:
            self.traps[worker].step = None

    def _handle(self, worker: int, received: Message) -> None:
        try:
            self.workers[worker].handle(Consumer(self.broker), received)
        except Crash:
            # The process died: the message stays unacked, a new worker (cold cache) starts.
            self.workers[worker] = self._worker(worker)
        except TransientBrokerError:
            pass  # a failed retry or archive send: handed back, still unacked

    # --- the invariant, after every step -----------------------------------------------

    @invariant()
    def nothing_referenced_is_gone(self) -> None:
        source = MetadataInUseLedgers(self.metadata, self.clock)
        referenced = set().union(*(source.fetch(topic).ledger_ids for topic in TOPICS))
        alive = set(self.storage.ledger_ids())
        assert referenced <= alive, f"referenced ledgers deleted: {referenced - alive}"
        deletions = [ledger for ledger, _ in self.storage.deletions()]
        assert len(deletions) == len(set(deletions)), "a ledger was deleted twice"
        assert set(deletions) <= self.released, (
            f"deleted unreleased: {set(deletions) - self.released}"
        )

    def teardown(self) -> None:
        """Liveness: run time forward and deliver until every message is settled."""
        self.traps = [Trap(), Trap()]
        self.faults.clear()
        self.broker.fail_sends = 0
        self.workers = [self._worker(0), self._worker(1)]
        for _ in range(10 * (MAX_RECONSUMES + 2)):
            if not self.broker.unacked:
                break
            self.clock.now += max(DELAY, TTL) + 1
            for received in list(self.broker.unacked.values()):
                self.workers[received.n % 2].handle(Consumer(self.broker), received)
        assert not self.broker.unacked, "messages never settled"
        deleted = {ledger for ledger, _ in self.storage.deletions()}
        archived = {
            message.decode(m.payload).ledger_id for m in self.broker.archived if _decodes(m)
        }
        assert self.released <= deleted | archived, self.released - deleted - archived
        unreleased = self.enqueued - self.released
        assert unreleased <= archived and not unreleased & deleted
        assert not (self.hostile - self.released) & deleted
        self.nothing_referenced_is_gone()
        self.metadata.close()
        self.storage.close()


def pending(topic: TopicName, ledger: int, check: bool = True) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(
        topic, LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, ledger, None, check
    )


def id_of(received: Message) -> int:
    return received.n


def _decodes(received: Message) -> bool:
    try:
        message.decode(received.payload)
    except Exception:
        return False
    return True


Protocol.TestCase.settings = settings(
    max_examples=scaled(100, 5000),
    stateful_step_count=scaled(40, 80),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_protocol = Protocol.TestCase


@pytest.mark.parametrize("check", [True, False], ids=["checked", "unchecked"])
def test_a_stale_snapshot_never_deletes_a_newer_referenced_ledger(check: bool) -> None:
    """The interleaving the random search finds only now and then, spelt out: the worker's
    snapshot predates a cursor ledger that a crashed rotation names. Checked, the staleness
    rule catches it; unchecked (checkLedgerStillInUse=false), the fresh read does."""
    machine = Protocol()
    machine.topics()
    topic = TOPICS[0]
    machine.busy_cursor(topic, worker=0, check=check)
    machine.time_passes(DELAY)
    crashed_first = sorted(machine.broker.due(), key=id_of, reverse=True)
    for received in crashed_first:
        machine._handle(0, received)
        machine.nothing_referenced_is_gone()
    assert machine.cursors[topic] in set(machine.storage.ledger_ids())
    machine.teardown()
