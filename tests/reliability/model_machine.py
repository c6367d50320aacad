"""The model test's machine: the protocol's parties and their state, the producers' moves,
time and transient faults, handling, the invariant and the final settling. The deliveries
and the fault scenarios are the rules in test_model.py."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    rule,
)

from consumers.handler import DeletionHandler
from consumers.received import Arrival
from consumers.reconsume import Reconsumer, RetryPolicy
from core.clock import EpochSeconds, MonotonicSeconds
from core.errors import TransientBrokerError, TransientMetadataError
from core.retry import TransientRetry
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain import message
from deletion.domain.decision import SafetyMargins
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import LedgerComponent
from deletion.domain.namespaces import NamespaceRegistry
from deletion.domain.outcome import Outcome, Result
from deletion.domain.topics import NamespaceName, TopicName
from producers import PhaseOne
from tests.reliability.model_world import (
    CATEGORIES,
    DELAY,
    SKEW,
    Born,
    Broker,
    Clock,
    Consumer,
    Crash,
    Message,
    Metadata,
    Pool,
    Snapshots,
    Storage,
    Trap,
    note,
)
from tests.reliability.oracle import GroundTruth, pending
from tests.reliability.raw_ledgers import SqliteLedgers

TTL = 600.0
MIN_AGE = 3600.0  # minLedgerAgeSeconds
DUE = DELAY + SKEW  # after a send, when its message is due
MARGINS = SafetyMargins(send_delay=DELAY, clock_skew=SKEW, min_ledger_age=MIN_AGE)
MAX_RECONSUMES = 10  # the default: exhausting it takes a whole retry chain
NAMESPACES = [NamespaceName("alpha", "ns"), NamespaceName("beta", "ns")]
TOPICS = [
    TopicName(NAMESPACES[0], "orders"),
    TopicName(NAMESPACES[1], "audit-partition-1"),
    TopicName(NAMESPACES[0], "a b%+~*\u00e9-partition-01"),  # encoded, and no partition
]
CURSORS = ("sub", "other")
# A topic's ledger creators, as (component, cursor): they create and record independently.
Creator = tuple[LedgerComponent, str | None]
CREATORS: list[Creator] = [
    (LedgerComponent.MANAGED_LEDGER, None),
    *((LedgerComponent.MANAGED_CURSOR, cursor) for cursor in CURSORS),
    (LedgerComponent.SCHEMA_STORAGE, None),
]
# Neither a ManagedLedgerInfo, a ManagedCursorInfo nor a SchemaLocator: a length-delimited
# field 1 that claims 5 bytes and has 2.
CORRUPT = b"\x0a\x05ab"
Trim = tuple[TopicName, int]


class ProtocolMachine(RuleBasedStateMachine):
    ledgers_to_trim = Bundle("ledgers_to_trim")
    crashed_trims = Bundle("crashed_trims")

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="model-"))
        db = str(self.directory / "model.db")
        self.clock = Clock()
        self.metadata = SqliteMetadataStore(db)
        self.storage = SqliteLedgerStorage(db)
        self.raw = SqliteLedgers(db)
        self.born = Born(self.storage, self.clock)
        self.truth = GroundTruth(self.metadata, self.born)
        self.broker = Broker(self.clock)
        self.faults: Counter[str] = Counter()
        self.traps = [Trap(), Trap()]
        self.pools = [Pool(self.broker, trap) for trap in self.traps]
        self.stores = [self._storage(trap) for trap in self.traps]
        self.workers = [self._worker(0), self._worker(1)]
        self.producer = Pool(self.broker)
        self.phase_one = PhaseOne(
            self.producer,  # type: ignore[arg-type]
            NamespaceRegistry(self.metadata),
            send_delay_seconds=DELAY,
        )
        self.released: set[int] = set()  # enqueued, then the commit dropped them
        self.enqueued: set[int] = set()  # every ledger a message was sent for
        self.hostile: set[int] = set()  # named by a message that must never delete it
        self.leaked: set[Trim] = set()
        self.zombies: set[int] = set()  # created, never recorded, enqueued: must be deleted

    def wall(self) -> EpochSeconds:
        return EpochSeconds(self.clock())

    def monotonic(self) -> MonotonicSeconds:
        return MonotonicSeconds(self.clock())

    def _storage(self, trap: Trap) -> Storage:
        return Storage(self.storage, self.born, trap, self.faults, self.raw)

    def _worker(self, index: int) -> DeletionHandler:
        """A worker process: a cold cache; its pool and stores die with it."""
        trap = self.traps[index]
        self.pools[index] = Pool(self.broker, trap)
        self.stores[index] = self._storage(trap)
        metadata = Metadata(self.metadata, trap, self.faults)
        source = Snapshots(MetadataInUseLedgers(metadata, self.wall), self.clock, TTL)
        cache = InUseLedgersCache(source, TTL, self.monotonic)
        reconsumer = Reconsumer(
            self.pools[index],  # type: ignore[arg-type]
            RetryPolicy(delay_seconds=DELAY, max_reconsume_times=MAX_RECONSUMES),
            self.clock,
        )
        return DeletionHandler(
            cache,
            self.stores[index],
            reconsumer,
            MARGINS,
            retry=TransientRetry(attempts=3, sleep=lambda _: None),
            clock=self.wall,
        )

    def _live(self, trim: Trim) -> bool:
        """The trim's ledger is still in its topic's list (not trimmed, nor its topic deleted)."""
        topic, ledger = trim
        return ledger in self.truth[topic].ledgers

    def _seed(self, topic: TopicName) -> list[Trim]:
        seeded = self.truth.seed(topic, 3, CURSORS, schema_versions=2)
        return [(topic, i) for i in seeded.ledgers[:-1]]

    # --- setup and producers ---------------------------------------------------------

    @initialize(target=ledgers_to_trim)
    def topics(self) -> Any:
        return multiple(*(trim for topic in TOPICS for trim in self._seed(topic)))

    @rule(target=ledgers_to_trim, topic=st.sampled_from(TOPICS))
    def roll_over(self, topic: TopicName) -> Any:
        """The broker adds a ledger: its id is above anything a cache has seen."""
        if not self.truth[topic].exists:
            return multiple()
        return (topic, self.truth.roll_over(topic))

    @rule(trim=consumes(ledgers_to_trim), check=st.booleans())
    def enqueue_then_commit(self, trim: Trim, check: bool = True) -> None:
        if not self._live(trim):
            return
        topic, ledger = trim
        self.phase_one.enqueue_then_commit(
            [pending(topic, ledger, check=check)], lambda: self.truth.release(topic, [ledger])
        )
        self.enqueued.add(ledger)
        self.released.add(ledger)

    @rule(target=crashed_trims, trim=consumes(ledgers_to_trim), check=st.booleans())
    def enqueue_then_crash(self, trim: Trim, check: bool) -> Trim:
        """Sent, and the producer dies before its commit: the ledger stays referenced. Even
        with checkLedgerStillInUse=false, the worker must see that on fresh metadata."""
        if self._live(trim):
            self.phase_one.enqueue([pending(trim[0], trim[1], check=check)])
            self.enqueued.add(trim[1])
        return trim

    @rule(trim=consumes(crashed_trims))
    def retry_the_crashed_trim(self, trim: Trim) -> None:
        """The broker trims again later: a second message for the same ledger."""
        self.enqueue_then_commit(trim)

    @rule(topic=st.sampled_from(TOPICS), cursor=st.sampled_from(CURSORS), crash=st.booleans())
    def rotate_cursor(self, topic: TopicName, cursor: str, crash: bool, check: bool = True) -> None:
        """Cursor-ledger rotation: new ledger, phase one for the old one, then the switch."""
        truth = self.truth[topic]
        if not truth.exists:
            return
        old = truth.cursors[cursor]
        new = self.truth.new_ledger(topic, LedgerComponent.MANAGED_CURSOR, cursor)
        info = pending(topic, old, LedgerComponent.MANAGED_CURSOR, check)
        self.enqueued.add(old)
        if crash:  # enqueued, but the cursor still points at the old ledger
            self.phase_one.enqueue([info])
            return
        self.phase_one.enqueue_then_commit(
            [info], lambda: self.truth.rotate_cursor(topic, cursor, new)
        )
        self.released.add(old)

    @rule(topic=st.sampled_from(TOPICS), crash=st.booleans())
    def drop_schema_version(self, topic: TopicName, crash: bool) -> Any:
        """The oldest schema version is deleted: phase one for its ledger, then the locator
        without it; a new version comes first, so the topic keeps one."""
        truth = self.truth[topic]
        if not truth.exists:
            return
        new = self.truth.new_ledger(topic, LedgerComponent.SCHEMA_STORAGE)
        self.truth.add_schema(topic, new)
        old = truth.schemas[0]
        info = pending(topic, old, LedgerComponent.SCHEMA_STORAGE)
        self.enqueued.add(old)
        if crash:
            self.phase_one.enqueue([info])
            return
        self.phase_one.enqueue_then_commit([info], lambda: self.truth.drop_schemas(topic, [old]))
        self.released.add(old)

    @rule(topic=st.sampled_from(TOPICS))
    def delete_topic(self, topic: TopicName) -> None:
        """The broker deletes the topic: phase one for every ledger, then its metadata."""
        truth = self.truth[topic]
        if not truth.exists:
            return
        infos = [
            *(pending(topic, i) for i in truth.ledgers),
            *(pending(topic, i, LedgerComponent.MANAGED_CURSOR) for i in truth.cursors.values()),
            *(pending(topic, i, LedgerComponent.SCHEMA_STORAGE) for i in truth.schemas),
        ]
        ids = {info.ledger_id for info in infos}
        self.phase_one.enqueue_then_commit(infos, lambda: self.truth.delete_topic(topic))
        self.enqueued |= ids
        self.released |= ids

    @rule(target=ledgers_to_trim, topic=st.sampled_from(TOPICS))
    def create_topic_again(self, topic: TopicName) -> Any:
        """Same name, new ledgers (ids above any the old incarnation had)."""
        if self.truth[topic].exists:
            return multiple()
        return multiple(*self._seed(topic))

    # --- time, failures, workers -----------------------------------------------------

    @rule(seconds=st.sampled_from([1.0, 30.0, DELAY, DUE, DUE + 1, DUE + 1, TTL, TTL + 1, MIN_AGE]))
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

    def _handle(self, worker: int, received: Message) -> None:
        try:
            self._count(self.workers[worker].handle(self._arrival(worker, received)))
        except Crash:
            # The process died: the message stays unacked, a new worker (cold cache) starts.
            self.workers[worker] = self._worker(worker)
        except TransientBrokerError:
            pass  # a failed retry or archive send: handed back, still unacked

    def _arrival(self, worker: int, received: Message) -> Arrival:
        return self.workers[worker].arrival(Consumer(self.broker), received)

    def _count(self, result: Result | Exception) -> None:
        """What a handling came to, for --hypothesis-show-statistics."""
        if not isinstance(result, Result):
            return
        why = next((name for key, name in CATEGORIES if key in result.reason), "")
        if result.outcome is Outcome.DELETED and result.info is not None:
            truth = self.truth[result.info.topic_name]
            if not truth.exists:
                why = "of a deleted topic, by the age rule"
            elif result.info.ledger_id > max(truth.referenced(), default=-1):
                why = "above the topic's newest, by the age rule"
        note(f"{result.outcome.value}: {why}" if why else result.outcome.value)

    # --- the invariant, after every step -----------------------------------------------

    @invariant()
    def nothing_referenced_is_gone(self) -> None:
        referenced, alive = self.truth.referenced(), self.raw.alive()
        assert referenced <= alive, f"referenced ledgers deleted: {referenced - alive}"
        deletions = self.raw.deletions() or []
        assert len(deletions) == len(set(deletions)), "a ledger was deleted twice"
        assert set(deletions) <= self.released, (
            f"deleted unreleased: {set(deletions) - self.released}"
        )

    def teardown(self) -> None:
        """Liveness: run time forward and deliver until every message is settled."""
        try:
            self._settle_everything()
        finally:
            self.metadata.close()
            self.storage.close()
            shutil.rmtree(self.directory, ignore_errors=True)

    def _settle_everything(self) -> None:
        self.traps = [Trap(), Trap()]
        self.faults.clear()
        self.workers = [self._worker(0), self._worker(1)]
        for _ in range(3 * (MAX_RECONSUMES + 2)):
            if not self.broker.unacked:
                break
            self.clock.now += max(DELAY, TTL) + 1
            for received in list(self.broker.unacked.values()):
                worker = received.n % 2
                self._count(self.workers[worker].handle(self._arrival(worker, received)))
        assert not self.broker.unacked, "messages never settled"
        deleted = set(self.raw.deletions() or [])
        archived = {message.decode(m.payload).ledger_id for m in self.broker.archived}
        assert self.released <= deleted | archived, self.released - deleted - archived
        unreleased = self.enqueued - self.released
        assert unreleased <= archived and not unreleased & deleted
        assert not (self.hostile - self.released) & deleted
        assert self.zombies <= deleted, f"old orphans not reclaimed: {self.zombies - deleted}"
        self.nothing_referenced_is_gone()
