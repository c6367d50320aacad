"""Early deliveries under faults, on a fake clock, with a real worker, broker and ZooKeeper.

pulsar-lite ignores delivery delays, so every message arrives at once, as from a broker
that delivers early. The worker's clock (its early-delivery gate, its in-use snapshots, its
reconsumer) is a fake that moves only when the test moves it. A message is due at

    publish time + max(DELAY_TIME or 0, sendDelaySeconds) + clockSkewAllowanceSeconds

so a missing, zero, negative, garbled or short DELAY_TIME cannot make it due earlier than
the configured floor, and a producer clock behind the worker's by up to the allowance
cannot either. Then: the gate full (messages handed back, not lost), the worker restarted
while it holds messages, the handler failing on due messages while others are held.

Each ledger delete the worker issues is stamped with the fake time at which it was issued
(by the kazoo client under its ledger store); due times are bounded from below by the real
time taken just before the first publish, since no publish time can be earlier. The
oracle is the test's own: what it planted and released, against the server's znodes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from consumers.worker import DeletionWorker
from core.clock import EpochSeconds
from deletion.domain import message
from deletion.domain.message_properties import DELAY_TIME
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Recorder
from harness.process import wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder, pending
from tests.reliability.support import scaled
from tests.reliability.zk_faults import Fault, FaultyKazoo, Request, refused
from tests.reliability.zk_rig import FakeClock, ZkRig, wait_outcomes, zk_rig

pytestmark = pytest.mark.timeout(scaled(120, 600))

FLOOR = 60  # sendDelaySecondsOfTwoPhaseDeletion
SKEW = 10  # clockSkewAllowanceSecondsOfTwoPhaseDeletion
LONG_MS = 600_000  # a DELAY_TIME above the floor: honoured
# DELAY_TIME values none of which may bring a message forward of the floor.
SHORT = [None, "0", "1000", "-5000", "soon", str(FLOOR * 1000)]
DONE = (Outcome.DELETED,)
SETTINGS: dict[str, object] = {
    "send_delay_seconds_of_two_phase_deletion": FLOOR,
    "clock_skew_allowance_seconds_of_two_phase_deletion": SKEW,
    "reconsume_later_seconds_of_two_phase_deletion": 30,
    "max_reconsume_times_of_two_phase_deletion": 5,
    "ledger_deletion_worker_threads_of_two_phase_deletion": 2,
    "ledger_deletion_batch_size_of_two_phase_deletion": 8,
}


@dataclass
class Stamps:
    """A plan for the worker's kazoo client: the fake time at which each ledger delete was
    issued; and, while `fault` is set, every ledger read fails with it."""

    clock: FakeClock
    fault: Fault | None = None
    at: dict[str, list[EpochSeconds]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request) -> Fault | None:
        if request.op == "delete":
            with self._lock:
                self.at.setdefault(request.path, []).append(self.clock())
        return self.fault if request.op == "get" else None

    def snapshot(self) -> dict[str, list[EpochSeconds]]:
        with self._lock:
            return {path: list(at) for path, at in self.at.items()}


@dataclass
class Early:
    rig: ZkRig
    namespace: NamespaceName
    clock: FakeClock
    stamps: Stamps
    owner: dict[int, TopicName] = field(default_factory=dict)
    start: float = 0.0  # real time before the first publish: no publish time is earlier
    published: float = 0.0  # real time after the last publish

    def plant(self, count: int) -> set[int]:
        """`count` ledgers of a new topic, released by its metadata: unreferenced."""
        backend = self.rig.janitor.backend
        seeder = TopicSeeder(backend.metadata, backend.factory)
        topic = TopicName(self.namespace, f"topic-{len(self.owner)}")
        seeded = seeder.seed(topic, count + 2)
        released = seeded.ledgers[:count]
        seeder.release(seeded, released)
        self.rig.referenced |= seeded.referenced()
        self.owner.update(dict.fromkeys(released, topic))
        self.rig.paths = self.rig.znodes.paths()
        return set(released)

    def worker(self, recorder: Recorder, **overrides: object) -> DeletionWorker:
        settings = {**SETTINGS, **overrides}
        self.rig.janitor.sidecar(**settings).registry.register(self.namespace)
        worker, _ = self.rig.worker(self.stamps, recorder, settings, self.clock)
        assert self.namespace in worker.subscribed
        return worker

    def publish(self, worker: DeletionWorker, messages: dict[int, str | None]) -> None:
        """ledger -> DELAY_TIME (None: no such property). On the worker's own connection,
        after it subscribed: pulsar-lite sometimes withholds messages from a subscription
        made after them."""
        producer = worker.client.create_producer(
            self.namespace.deletion_topic, batching_enabled=False
        )
        self.start = self.start or time.time()
        try:
            for ledger_id, delay in sorted(messages.items()):
                payload = message.encode(pending(self.owner[ledger_id], ledger_id))
                properties = {} if delay is None else {DELAY_TIME: delay}
                producer.send(payload, properties, partition_key=str(ledger_id))
        finally:
            producer.close()
        self.published = time.time()

    def deleted_at(self) -> dict[int, list[EpochSeconds]]:
        """Ledger -> the fake times its deletes were issued at."""
        return {self.rig.ledger_of(path): at for path, at in self.stamps.snapshot().items()}

    def assert_none_before(self, due: float, ledgers: set[int]) -> None:
        deleted_at = self.deleted_at()
        early = {i: min(deleted_at[i]) for i in ledgers if min(deleted_at[i]) < due}
        assert early == {}, f"deleted before {due}"

    def assert_untouched(self, ledgers: set[int], *recorders: Recorder) -> None:
        """Not handled at all (no delete issued, no outcome), still there."""
        self.clock.settle()
        assert not set(self.deleted_at()) & ledgers
        handled = {i for r in recorders for i in ledgers if r.of(i)}
        assert handled == set(), "handled before due"
        assert ledgers <= self.rig.znodes.ids()


@pytest.fixture
def early(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> Iterator[Early]:
    clock = FakeClock(time.time())
    with zk_rig(zookeeper, broker, chroot, tmp_path) as rig:
        yield Early(rig, namespace, clock, Stamps(clock))


def deleted_once(ledgers: set[int]) -> dict[int, list[Outcome]]:
    return {i: [Outcome.DELETED] for i in sorted(ledgers)}


@pytest.mark.parametrize("ahead", [0, FLOOR + 5], ids=["clocks agree", "producer clock behind"])
def test_nothing_is_acted_on_before_its_due_time(early: Early, ahead: int) -> None:
    """Due at the floor whatever the DELAY_TIME says; a longer DELAY_TIME is honoured. With
    the producer's clock behind ours by more than the floor (but within floor + allowance),
    a message looks overdue on arrival: the allowance still holds it."""
    early.clock.set(time.time() + ahead)
    short, long = early.plant(2 * len(SHORT)), early.plant(3)
    everything = short | long
    results = Recorder()
    worker = early.worker(results)
    delays = {ledger: SHORT[i % len(SHORT)] for i, ledger in enumerate(sorted(short))}
    early.publish(worker, {**delays, **dict.fromkeys(long, str(LONG_MS))})
    wait_until(lambda: worker.stats.received >= len(everything), 30, "every message received")
    early.assert_untouched(everything, results)
    assert worker.stats.held_early == len(everything), "a message was not held on arrival"

    short_due = early.start + FLOOR + SKEW  # no short message is due earlier
    early.clock.set(short_due - 1)
    early.assert_untouched(everything, results)
    early.clock.set(early.published + FLOOR + SKEW + 1)
    early.rig.wait_gone(short)
    early.assert_untouched(long, results)

    long_due = early.start + LONG_MS / 1000 + SKEW
    early.clock.set(long_due - 1)
    early.assert_untouched(long, results)
    early.clock.set(early.published + LONG_MS / 1000 + SKEW + 1)
    early.rig.wait_gone(long)

    early.assert_none_before(short_due, short)
    early.assert_none_before(long_due, long)
    early.rig.assert_referenced_intact()
    assert wait_outcomes(everything, results, final=DONE) == deleted_once(everything)


def test_a_full_gate_hands_messages_back_and_acts_on_none_early(early: Early) -> None:
    """Past the gate's capacity, arrivals are negatively acknowledged: not acted on, not
    lost. pulsar-lite redelivers those of a partitioned topic only to a new consumer, so
    the test restarts the worker once the held ones are done; it must not act early either."""
    capacity = 3
    ledgers = early.plant(8)
    first_results = Recorder()
    first = early.worker(first_results, max_held_early_messages=capacity)
    early.publish(first, dict.fromkeys(ledgers, "0"))
    refused = len(ledgers) - capacity
    wait_until(lambda: first.stats.handed_back >= refused, 30, "the overflow handed back")
    assert (first.stats.received, first.stats.handed_back) == (len(ledgers), refused)
    due = early.start + FLOOR + SKEW
    early.clock.set(due - 1)
    early.assert_untouched(ledgers, first_results)

    early.clock.set(early.published + FLOOR + SKEW + 1)

    def held_ones_gone() -> bool:
        return len(ledgers - early.rig.znodes.ids()) >= capacity

    wait_until(held_ones_gone, 30, "the held ones deleted")
    first.stop()
    second_results = Recorder()
    early.worker(second_results, max_held_early_messages=capacity)
    early.rig.wait_gone(ledgers)

    early.assert_none_before(due, ledgers)
    early.rig.assert_referenced_intact()
    assert wait_outcomes(ledgers, first_results, second_results, final=DONE) == deleted_once(
        ledgers
    )


def test_held_messages_survive_a_worker_restart_and_still_wait(early: Early) -> None:
    """A worker stopped while holding messages acked none of them: the next one gets them
    all again, and holds them again until they are due."""
    short, long = early.plant(6), early.plant(2)
    everything = short | long
    first_results = Recorder()
    first = early.worker(first_results)
    early.publish(first, {**dict.fromkeys(short), **dict.fromkeys(long, str(LONG_MS))})
    wait_until(lambda: first.stats.held_early >= len(everything), 30, "every message held")
    short_due = early.start + FLOOR + SKEW
    early.clock.set(short_due - 1)
    early.assert_untouched(everything, first_results)
    first.stop()

    second_results = Recorder()
    second = early.worker(second_results)
    wait_until(lambda: second.stats.held_early >= len(everything), 30, "every message back")
    early.assert_untouched(everything, first_results, second_results)
    early.clock.set(early.published + FLOOR + SKEW + 1)
    early.rig.wait_gone(short)
    early.assert_untouched(long, first_results, second_results)
    early.clock.set(early.published + LONG_MS / 1000 + SKEW + 1)
    early.rig.wait_gone(long)

    early.assert_none_before(short_due, short)
    early.assert_none_before(early.start + LONG_MS / 1000 + SKEW, long)
    early.rig.assert_referenced_intact()
    assert wait_outcomes(everything, first_results, second_results, final=DONE) == deleted_once(
        everything
    )


class InjectedBugError(Exception):
    """Not a store error the adapter knows: the handler fails outright."""


def raising(client: FaultyKazoo, request: Request, send: Callable[[], Any]) -> Any:
    raise InjectedBugError(f"injected while reading {request.path}")


@pytest.mark.parametrize("failure", ["store unreachable", "handler raises"])
def test_handler_failures_while_messages_are_held(early: Early, failure: str) -> None:
    """The first messages fall due and their handling fails, while longer-delayed ones are
    held: those stay held, untouched. The failed ones are not lost: reconsumed (and held
    again until their retry is due), or handed back (and, on a restart, delivered again)."""
    short, long = early.plant(6), early.plant(3)
    early.stamps.fault = refused if failure == "store unreachable" else raising
    results = Recorder()
    worker = early.worker(results)
    early.publish(worker, {**dict.fromkeys(short), **dict.fromkeys(long, str(LONG_MS))})
    count = len(short) + len(long)
    wait_until(lambda: worker.stats.held_early >= count, 30, "every message held")
    early.assert_untouched(short | long, results)

    early.clock.set(early.published + FLOOR + SKEW + 1)
    if failure == "store unreachable":
        # Each reconsumed: its retry is a new message, published now, so held once more.
        results.wait_for(lambda _: results.count(Outcome.RECONSUMED) >= len(short))
        wait_until(lambda: worker.stats.held_early >= count + len(short), 30, "retries held")
    else:
        wait_until(lambda: worker.stats.handed_back >= len(short), 30, "handed back")
    early.assert_untouched(short)  # handled, and failed: not deleted
    early.assert_untouched(long, results)

    early.stamps.fault = None
    earlier = results
    if failure == "store unreachable":
        early.clock.set(time.time() + FLOOR + SKEW + 1)  # past every retry's due time
    else:
        worker.stop()
        results = Recorder()
        early.worker(results)
    early.rig.wait_gone(short)
    early.assert_untouched(long, earlier, results)
    early.clock.set(early.published + LONG_MS / 1000 + SKEW + 1)
    early.rig.wait_gone(long)

    early.assert_none_before(early.start + FLOOR + SKEW, short)
    early.assert_none_before(early.start + LONG_MS / 1000 + SKEW, long)
    early.rig.assert_referenced_intact()
    recorders = (earlier, results) if earlier is not results else (results,)
    wait_outcomes(short | long, *recorders, final=DONE)
