"""A model-based test of the whole protocol (hypothesis stateful): random interleavings of

- producers that enqueue then commit, that crash between the two, whose send fails, or
  that retry a trim they crashed in; ledger roll-overs; rotations of several cursors and
  schema versions dropped (also crashing); topics deleted and created again within the
  cache's TTL;
- two workers with their own TTL caches on one fake clock, so caches go stale;
- deliveries in any order, one at a time or in batches (with duplicates inside a batch),
  duplicate deliveries of acked messages, whole retry chains until they are archived,
  crashes of a worker at every step of phase two (then replaced, cache and all), transient
  store failures, failed retry sends, corrupt metadata values, and ledgers changed by
  someone else between the worker's read and its delete;
- messages naming another tenant's ledger, or a ledger of the wrong component;

checking the invariant after every step against the test's own record (oracle.py), never
the product's reader: no ledger that metadata references is gone, no ledger was deleted
that no message released, nothing was deleted twice. At the end, with time run forward,
every message is settled: every released ledger deleted or archived, every unreleased one
archived and intact, nothing left unacked.

The real DeletionHandler, PhaseOne, Reconsumer, TTL cache, metadata reader and both SQLite
adapters run here; the broker is a dictionary of unacked messages and the clock is fake.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    consumes,
    precondition,
    rule,
)

from core.errors import EnqueueError
from deletion.domain import message
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.topics import TopicName
from tests.reliability.model_machine import (
    CORRUPT,
    CREATORS,
    CURSORS,
    DUE,
    MAX_RECONSUMES,
    MIN_AGE,
    NAMESPACES,
    TOPICS,
    Creator,
    ProtocolMachine,
    Trim,
)
from tests.reliability.model_world import CRASH_STEPS, SKEW, Crash, id_of, note, topic_of
from tests.reliability.oracle import ml_path, pending, schema_path
from tests.reliability.support import scaled

# A failure is shrunk for up to five minutes (hypothesis's own limit): let it finish.
pytestmark = pytest.mark.timeout(scaled(600, 3600))


class Protocol(ProtocolMachine):
    @rule(trim=consumes(ProtocolMachine.ledgers_to_trim))
    def leak(self, trim: Trim) -> None:
        """A ledger dropped from metadata with no phase one (a legacy leak, issue #13238):
        unreferenced, but nobody asked for its deletion, so no message may delete it."""
        if self._live(trim):
            self.truth.release(trim[0], [trim[1]])
            self.leaked.add(trim)

    @rule(trim=ProtocolMachine.ledgers_to_trim)
    def send_fails(self, trim: Trim) -> None:
        if not self._live(trim):
            return
        topic, ledger = trim
        before = list(self.truth[topic].ledgers)
        self.producer.fail_next = 1
        try:
            self.phase_one.enqueue_then_commit(
                [pending(topic, ledger)], lambda: self.truth.release(topic, [ledger])
            )
        except EnqueueError:
            pass
        else:
            raise AssertionError("a failed send let the commit run")
        finally:
            self.producer.fail_next = 0
        assert self.truth[topic].ledgers == before

    @rule(data=st.data(), cross_namespace=st.booleans())
    def hostile_message(self, data: st.DataObject, cross_namespace: bool) -> None:
        """A ledger (referenced or leaked) named on another namespace's deletion topic, or
        under a component that is not its own: archived, and never deleted by it."""
        topic = data.draw(st.sampled_from(TOPICS))
        truth = self.truth[topic]
        leaked = sorted(ledger for owner, ledger in self.leaked if owner == topic)
        victims = [*truth.referenced(), *leaked]
        if not victims:
            return
        victim = data.draw(st.sampled_from(sorted(victims)))
        own = LedgerComponent.MANAGED_LEDGER
        if victim in truth.cursors.values():
            own = LedgerComponent.MANAGED_CURSOR
        elif victim in truth.schemas:
            own = LedgerComponent.SCHEMA_STORAGE
        if cross_namespace:
            component = own
            arrives_on = next(ns for ns in NAMESPACES if ns != topic.namespace)
        else:
            component = data.draw(st.sampled_from([c for c in LedgerComponent if c is not own]))
            arrives_on = topic.namespace
        info = PendingDeleteLedgerInfo(topic, component, LedgerType.LEDGER, victim)
        self.broker.publish(arrives_on.deletion_topic, message.encode(info), {}, "")
        self.hostile.add(victim)

    @rule(topic=st.sampled_from(TOPICS), worker=st.integers(0, 1), check=st.booleans())
    def recreated_within_the_ttl(self, topic: TopicName, worker: int, check: bool) -> None:
        """Issue 11's first defect, spelt out: the worker caches "topic absent" while it
        deletes the old ledgers; the topic comes back with new ledgers, a trim of one of
        them sends its phase one and dies before the commit; the message comes due while
        the cached absence is still within the TTL. The ledger is referenced."""
        self.delete_topic(topic)
        self.time_passes(DUE + 1)
        old = [m for m in self.broker.due() if topic_of(m) == topic]
        if old:
            self._handle(worker, old[0])
        trims = self._seed(topic)
        self.enqueue_then_crash(trims[0], check)
        self.time_passes(DUE + 1)
        for received in [m for m in self.broker.due() if topic_of(m) == topic]:
            self._handle(worker, received)
        assert trims[0][1] in self.raw.alive()

    @rule(topic=st.sampled_from(TOPICS), worker=st.integers(0, 1), check=st.booleans())
    def busy_cursor(self, topic: TopicName, worker: int, check: bool) -> None:
        """A worker has just looked the topic up; then its cursor rotates twice within the
        cache's TTL, and the second rotation's producer dies before its commit. The ledger
        that message names is newer than anything the worker's snapshot knows, and still
        referenced: only the staleness rule (or, unchecked, a fresh read) can tell."""
        self.warm_cache(worker, topic)
        self.rotate_cursor(topic, "sub", crash=False)
        self.rotate_cursor(topic, "sub", crash=True, check=check)

    @rule(topic=st.sampled_from(TOPICS), worker=st.integers(0, 1), check=st.booleans())
    def busy_roll_over(self, topic: TopicName, worker: int, check: bool) -> None:
        """As busy_cursor, for a new managed-ledger ledger whose trim dies before its commit."""
        if not self.truth[topic].exists:
            return
        self.warm_cache(worker, topic)
        self.enqueue_then_crash((topic, self.truth.roll_over(topic)), check)

    @rule(topic=st.sampled_from(TOPICS), worker=st.integers(0, 1), check=st.booleans())
    def slow_roll_over(self, topic: TopicName, worker: int, check: bool) -> None:
        """A ledger is created, and recorded only after a later one of the same topic (a
        cursor's) was: a snapshot read in between knows a larger id, and not this one. Its
        trim then dies before the commit; that snapshot must not vouch for it."""
        if not self.truth[topic].exists:
            return
        slow = self.truth.new_ledger(topic, LedgerComponent.MANAGED_LEDGER)
        self.rotate_cursor(topic, "other", crash=False)
        self.warm_cache(worker, topic)
        self.truth.set_ledgers(topic, [*self.truth[topic].ledgers, slow])
        self.enqueue_then_crash((topic, slow), check)

    @rule(
        topic=st.sampled_from(TOPICS),
        worker=st.integers(0, 1),
        recorded_after=st.sampled_from([DUE + 1, MIN_AGE - SKEW / 2]),
    )
    def a_ledger_being_created_is_enqueued(
        self, topic: TopicName, worker: int, recorded_after: float
    ) -> None:
        """The audit takes a ledger for an orphan while the broker is still creating it; the
        message comes due before the broker records the ledger, within the grace period
        (but perhaps not by the ledger store's clock, which runs behind). Nothing can vouch
        for the ledger yet: only its age can, and it is young."""
        if not self.truth[topic].exists:
            return
        ledger = self.truth.new_ledger(topic, LedgerComponent.MANAGED_LEDGER)
        self.phase_one.enqueue([pending(topic, ledger)])
        self.enqueued.add(ledger)
        self.time_passes(recorded_after)
        for received in self.broker.due():
            if message.decode(received.payload).ledger_id == ledger:
                self._handle(worker, received)
        self.truth.set_ledgers(topic, [*self.truth[topic].ledgers, ledger])
        assert ledger in self.raw.alive()

    @rule(topic=st.sampled_from(TOPICS), creator=st.sampled_from(CREATORS))
    def a_zombie_is_enqueued(self, topic: TopicName, creator: Creator) -> None:
        """A broker created a ledger and died before recording it (BookKeeper's "zombie"):
        above what its creator recorded, and the topic may never roll over again, nor the
        cursor switch again. The audit enqueues it. Young, it may be being created, so it
        stays (the invariant); once older than the age rule nothing can record it, so it
        must be deleted, never archived as "may still be creating it" (the teardown)."""
        if not self.truth[topic].exists:
            return
        ledger = self.truth.new_ledger(topic, creator[0], creator[1] or "")
        self.phase_one.enqueue([pending(topic, ledger, creator[0])])
        self.enqueued.add(ledger)
        self.released.add(ledger)  # referenced by nothing, ever: it may go once old
        self.zombies.add(ledger)
        note(f"a zombie of {creator[0].value}")

    @rule(
        topic=st.sampled_from(TOPICS),
        worker=st.integers(0, 1),
        being_created=st.lists(st.sampled_from(CREATORS), min_size=1, max_size=3, unique=True),
        recorded_first=st.lists(st.sampled_from(CREATORS), max_size=3, unique=True),
        recorded_after=st.sampled_from([DUE + 1, MIN_AGE - SKEW / 2]),
        batch=st.booleans(),
    )
    def ledgers_being_created_below_a_recorded_one(
        self,
        topic: TopicName,
        worker: int,
        being_created: list[Creator],
        recorded_first: list[Creator],
        recorded_after: float,
        batch: bool,
    ) -> None:
        """Issue 24's hole: a topic's creators work at once, and each creates a ledger before
        it records it. Some creators are creating a ledger each (the audit takes them for
        orphans and enqueues them); meanwhile other creators record newer ledgers, so each
        ledger being created is below one the snapshot lists. The messages come due and are
        handled; then the slow creators record theirs, one by one. Every one still exists."""
        if not self.truth[topic].exists:
            return
        creating = {c: self.truth.new_ledger(topic, c[0], c[1] or "") for c in being_created}
        for creator, ledger in creating.items():
            self.phase_one.enqueue([pending(topic, ledger, creator[0])])
            self.enqueued.add(ledger)
        for creator in recorded_first:
            if creator not in creating:
                self._record_newer(topic, creator)
        note(f"{len(creating)} being created below a recorded one")
        self.time_passes(recorded_after)
        self._deliver_about(worker, set(creating.values()), batch)
        for creator, ledger in creating.items():
            self._record(topic, creator, ledger)
            self._deliver_about(worker, set(creating.values()), batch)
            assert ledger in self.raw.alive(), f"{creator} ledger {ledger} deleted while created"

    def _record_newer(self, topic: TopicName, creator: Creator) -> None:
        component, cursor = creator
        if component is LedgerComponent.MANAGED_LEDGER:
            self.truth.roll_over(topic)
        elif component is LedgerComponent.MANAGED_CURSOR:
            assert cursor is not None
            self.rotate_cursor(topic, cursor, crash=False)
        else:
            self.truth.add_schema(topic, self.truth.new_ledger(topic, component))

    def _record(self, topic: TopicName, creator: Creator, ledger: int) -> None:
        """The slow creator records its ledger at last. A cursor's old ledger is then released
        if a message names it (a rotation that died before its commit), else it leaks."""
        component, cursor = creator
        if component is LedgerComponent.MANAGED_LEDGER:
            self.truth.set_ledgers(topic, [*self.truth[topic].ledgers, ledger])
        elif component is LedgerComponent.MANAGED_CURSOR:
            assert cursor is not None
            old = self.truth.rotate_cursor(topic, cursor, ledger)
            if old in self.enqueued:  # a rotation that died before its commit: done now
                self.released.add(old)
        else:
            self.truth.add_schema(topic, ledger)

    def _deliver_about(self, worker: int, ledgers: set[int], batch: bool) -> None:
        due = [m for m in self.broker.due() if message.decode(m.payload).ledger_id in ledgers]
        if batch and due:
            try:
                self.workers[worker].handle_batch([self._arrival(worker, m) for m in due])
            except Crash:
                self.workers[worker] = self._worker(worker)
            return
        for received in due:
            self._handle(worker, received)

    @precondition(lambda self: self.broker.due())
    @rule(data=st.data(), worker=st.integers(0, 1))
    def deliver(self, data: st.DataObject, worker: int) -> None:
        self._handle(worker, data.draw(st.sampled_from(self.broker.due())))

    @precondition(lambda self: self.broker.due())
    @rule(data=st.data(), worker=st.integers(0, 1))
    def deliver_until_settled(self, data: st.DataObject, worker: int) -> None:
        """A message and then each retry it becomes, each when it comes due, until one is
        deleted or archived: exhausting the retries is common, not a rarity."""
        received = data.draw(st.sampled_from(self.broker.due()))
        for _ in range(MAX_RECONSUMES + 2):
            self._handle(worker, received)
            waiting = self.broker.unacked.values()
            after = [m for m in waiting if m.n > received.n and m.payload == received.payload]
            if received.n in self.broker.unacked or not after:
                return
            received = min(after, key=id_of)
            self.clock.now = max(self.clock.now, received.due())

    @precondition(lambda self: self.broker.unacked)
    @rule(data=st.data(), worker=st.integers(0, 1))
    def deliver_early(self, data: st.DataObject, worker: int) -> None:
        """A broker that ignores delays, and a gate that let it through: before it is due."""
        waiting = sorted(self.broker.unacked.values(), key=id_of)
        self._handle(worker, data.draw(st.sampled_from(waiting)))

    @precondition(lambda self: self.broker.acked)
    @rule(data=st.data(), worker=st.integers(0, 1))
    def deliver_a_duplicate(self, data: st.DataObject, worker: int) -> None:
        """At-least-once: an acked message comes again (a lost ack, a broker restart)."""
        received = data.draw(st.sampled_from(sorted(self.broker.acked.values(), key=id_of)))
        self._handle(worker, received)

    @precondition(lambda self: self.broker.due())
    @rule(data=st.data(), worker=st.integers(0, 1), step=st.sampled_from(CRASH_STEPS))
    def crash_mid_handling(self, data: st.DataObject, worker: int, step: str) -> None:
        received = data.draw(st.sampled_from(self.broker.due()))
        self.traps[worker].step = step
        self._handle(worker, received)
        self.traps[worker].step = None

    @precondition(lambda self: self.broker.due())
    @rule(data=st.data(), worker=st.integers(0, 1))
    def retry_send_fails(self, data: st.DataObject, worker: int) -> None:
        """The send to the retry (or archive) topic fails: nothing may be acked."""
        referenced = self.truth.referenced()
        due = self.broker.due()
        resent = [m for m in due if message.decode(m.payload).ledger_id in referenced]
        received = data.draw(st.sampled_from(resent or due))  # mostly one that will be resent
        pool = self.pools[worker]
        pool.fail_next = 1
        self._handle(worker, received)
        if pool.fail_next == 0:  # it did try to send
            note("a retry or archive send failed")
            assert received.n in self.broker.unacked, "acked though its retry was never sent"
        pool.fail_next = 0

    @precondition(lambda self: self.broker.due())
    @rule(data=st.data(), worker=st.integers(0, 1))
    def changed_between_read_and_delete(self, data: st.DataObject, worker: int) -> None:
        """Someone else changes each ledger's metadata right after the worker read it: the
        versioned delete must refuse, whatever the worker decided on the read."""
        received = data.draw(st.sampled_from(self.broker.due()))
        store = self.stores[worker]
        store.changing, store.changed = True, []
        try:
            self._handle(worker, received)
        finally:
            store.changing = False
        if store.changed:
            note("a ledger changed between the read and the delete")
        assert set(store.changed) <= self.raw.alive(), "deleted a ledger at a stale version"

    @precondition(lambda self: self.broker.due())
    @rule(
        data=st.data(),
        which=st.sampled_from(["managed ledger", *CURSORS, "schema"]),
        worker=st.integers(0, 1),
    )
    def corrupt_metadata(self, data: st.DataObject, which: str, worker: int) -> None:
        """A value of the topic's metadata does not decode: while it is so, nothing of that
        topic may be deleted. A restarted worker (cold cache) takes everything due."""
        topic = data.draw(st.sampled_from(sorted({topic_of(m) for m in self.broker.due()})))
        truth = self.truth[topic]
        path = {"managed ledger": ml_path(topic), "schema": schema_path(topic)}.get(
            which, f"{ml_path(topic)}/{which}"
        )
        node = self.metadata.get(path)
        if not truth.exists or node is None:
            return
        self.metadata.set(path, CORRUPT)
        before = len(self.raw.deletions() or [])
        self.workers[worker] = self._worker(worker)
        for received in self.broker.due():
            if topic_of(received) == topic:
                note("a message came due while its topic's metadata was corrupt")
            self._handle(worker, received)
        deleted = (self.raw.deletions() or [])[before:]
        ours = [i for i in deleted if self.truth.owner.get(i) == topic]
        assert ours == [], f"deleted {ours} of {topic} while its {which} was corrupt"
        version = self.metadata.set(path, node.data).version
        if which == "managed ledger":
            truth.version = version

    @precondition(lambda self: self.broker.due())
    @rule(data=st.data(), worker=st.integers(0, 1), step=st.sampled_from([None, *CRASH_STEPS]))
    def deliver_a_batch(self, data: st.DataObject, worker: int, step: str | None) -> None:
        """The worker takes what is waiting as one batch (one pipelined read, one pipelined
        delete): due messages, acked ones coming again, the same one twice; perhaps dying
        part-way through it."""
        waiting = [*self.broker.due(), *sorted(self.broker.acked.values(), key=id_of)]
        everything = st.just(self.broker.due())  # a backlog: the queue taken whole
        batch = data.draw(everything | st.lists(st.sampled_from(waiting), min_size=2, max_size=6))
        self.traps[worker].step = step
        try:
            arrivals = [self._arrival(worker, m) for m in batch]
            results = self.workers[worker].handle_batch(arrivals)
            for result in results:
                self._count(result)
        except Crash:
            self.workers[worker] = self._worker(worker)
        finally:
            self.traps[worker].step = None


Protocol.TestCase.settings = settings(
    max_examples=scaled(200, 5000),
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
    machine.time_passes(DUE)
    crashed_first = sorted(machine.broker.due(), key=id_of, reverse=True)
    for received in crashed_first:
        machine._handle(0, received)
        machine.nothing_referenced_is_gone()
    assert machine.truth[topic].cursors["sub"] in machine.raw.alive()
    machine.teardown()


@pytest.mark.parametrize("check", [True, False], ids=["checked", "unchecked"])
def test_a_topic_created_again_within_the_ttl_keeps_its_referenced_ledger(check: bool) -> None:
    """Issue 11's first defect: a cached "topic absent" must not delete the new ledger."""
    machine = Protocol()
    machine.topics()
    machine.recreated_within_the_ttl(TOPICS[2], worker=0, check=check)
    machine.nothing_referenced_is_gone()
    machine.teardown()
