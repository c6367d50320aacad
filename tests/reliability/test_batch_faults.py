"""Faults inside the real pipelined ZooKeeper batch path, under a real worker and broker.

Phase two reads a batch's ledger znodes with one pipelined `get_many` and deletes them with
one pipelined, versioned `delete_many`. Here the kazoo client under our adapter fails
requests in the middle of such a burst: refused before it leaves, applied with its reply
lost, the connection broken or the session expired with replies in flight, the worker
killed after the server applied part of a burst, a ledger changed by another writer between
the batch read and the batch delete, one ledger whose reads keep failing, a corrupt znode.

The oracle is the test's own: which ledgers it planted as referenced (kept and cursor
ledgers) and which it released and enqueued, checked against the znodes the server holds,
listed by a plain kazoo client. After each: nothing referenced is gone, every released
ledger is gone (messages left unacked by a failure came back), nothing was deleted at a
version other than the one read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from consumers.handler import HandlingResult, Outcome
from consumers.worker import DeletionWorker
from deletion.decision import pulsar_custom_metadata
from deletion.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.message import LedgerComponent
from deletion.stores.zookeeper import ZooKeeperMetadataStore
from deletion.topics import NamespaceName, TopicName
from ledger_janitor.embedded import EmbeddedBroker

from ..harness.janitor import Backend, JanitorFactory, Recorder, zookeeper_backend
from ..harness.process import wait_until
from ..harness.zookeeper import ZooKeeperServer
from .support import build_scenario, scaled
from .zk_faults import (
    Fault,
    FaultyKazoo,
    LedgerZnodes,
    Plan,
    Request,
    Times,
    after,
    connection_dropped,
    crash_after_applied,
    ledger_metadata,
    refused,
    reply_lost,
    session_expired,
)

pytestmark = pytest.mark.timeout(scaled(120, 600))

RELEASED_PER_TOPIC = scaled(12, 100)
SETTINGS: dict[str, object] = {
    "send_delay_seconds_of_two_phase_deletion": 0,
    "clock_skew_allowance_seconds_of_two_phase_deletion": 0,
    "reconsume_later_seconds_of_two_phase_deletion": 0,
    "max_reconsume_times_of_two_phase_deletion": 50,
    # One handler thread, so a batch is whatever piled up while the previous one ran.
    "ledger_deletion_parallelism_of_two_phase_deletion": 1,
    "ledger_deletion_batch_size_of_two_phase_deletion": 8,
}
SETTLED = (Outcome.DELETED, Outcome.ALREADY_GONE)


def no_faults(request: Request) -> Fault | None:
    return None


@dataclass
class Rig:
    """Planted topics on a private chroot, and workers whose ledger store is a FaultyKazoo."""

    janitor: JanitorFactory
    server: str
    hosts: str  # with the chroot
    znodes: LedgerZnodes
    released: set[int]
    referenced: set[int]
    paths: dict[int, str]
    workers: list[DeletionWorker] = field(default_factory=list)

    def worker(
        self,
        plan: Plan,
        on_result: Callable[[HandlingResult], None],
        **overrides: object,
    ) -> tuple[DeletionWorker, FaultyKazoo]:
        side = self.janitor.sidecar(**{**SETTINGS, **overrides})
        client = FaultyKazoo(self.hosts, plan, timeout=10)
        client.start(timeout=15)
        side.ledgers = BookKeeperLedgerStorage(ZooKeeperMetadataStore(client, owns_client=True))
        side.closer.callback(side.ledgers.close)
        worker = side.worker(on_result=on_result, refresh_interval_seconds=0.2)
        worker.start()
        self.workers.append(worker)
        return worker, client

    def wait_gone(self, ledgers: set[int], timeout: float = 60.0) -> None:
        left: set[int] = set()

        def gone() -> bool:
            left.clear()
            left.update(ledgers & self.znodes.ids())
            return not left

        try:
            wait_until(gone, timeout, "released ledgers gone")
        except AssertionError:
            raise AssertionError(f"released ledgers still there: {sorted(left)}") from None

    def assert_referenced_intact(self) -> None:
        missing = sorted(self.referenced - self.znodes.ids())
        assert missing == [], f"referenced ledgers deleted: {missing}"


@pytest.fixture
def rig(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> Iterator[Rig]:
    backend: Backend = zookeeper_backend(zookeeper.hosts, chroot)
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    znodes = LedgerZnodes(zookeeper.hosts + chroot)
    made: Rig | None = None
    try:
        producer = janitor.sidecar(**SETTINGS)
        scenario = build_scenario(backend, producer, [namespace], 2, RELEASED_PER_TOPIC)
        referenced = set().union(*(seeded.referenced() for seeded in scenario.topics))
        paths = znodes.paths()
        assert scenario.released | referenced == set(paths), "planting went wrong"
        made = Rig(
            janitor,
            zookeeper.hosts,
            zookeeper.hosts + chroot,
            znodes,
            scenario.released,
            referenced,
            paths,
        )
        yield made
    finally:
        for worker in made.workers if made else []:
            worker.stop()
        janitor.close()
        backend.ledgers.close()
        znodes.close()


def outcomes(recorders: list[Recorder], ledger_id: int) -> list[Outcome]:
    return [outcome for recorder in recorders for outcome in recorder.of(ledger_id)]


def assert_every_message_settled(rig: Rig, *recorders: Recorder) -> None:
    """Each released ledger's message ended deleted or already gone: none lost or archived."""
    unsettled = {
        ledger: found
        for ledger in rig.released
        if not (found := outcomes(list(recorders), ledger)) or found[-1] not in SETTLED
    }
    assert unsettled == {}


TRANSIENT: dict[str, tuple[str, Callable[[Rig], Fault], int]] = {
    "get refused": ("get", lambda rig: refused, 3),
    "get reply lost": ("get", lambda rig: reply_lost, 3),
    "delete refused": ("delete", lambda rig: refused, 3),
    "delete applied, reply lost": ("delete", lambda rig: reply_lost, 3),
    "connection dropped after a get": ("get", lambda rig: connection_dropped, 2),
    "connection dropped after a delete": ("delete", lambda rig: connection_dropped, 2),
    "session expired after a delete": ("delete", lambda rig: session_expired(rig.server), 2),
}


@pytest.mark.parametrize("case", TRANSIENT)
def test_transient_fault_in_the_middle_of_a_pipelined_batch(rig: Rig, case: str) -> None:
    op, make, times = TRANSIENT[case]
    # The second request of a burst or later: an earlier one of the same batch is in flight.
    plan = Times(lambda r: r.op == op and r.index >= 2, make(rig), times)
    recorder = Recorder()
    worker, client = rig.worker(plan, recorder)
    try:
        rig.wait_gone(rig.released)
        alive, detail = worker.live()
    finally:
        worker.stop()

    rig.assert_referenced_intact()
    assert_every_message_settled(rig, recorder)
    assert alive, detail
    assert len(plan.fired) == times, f"the fault fired {len(plan.fired)} times"
    hit = [client.burst(request.burst) for request in plan.fired]
    # Mid-batch: requests of the same burst were issued before and after the faulted one,
    # so the adapter had to collect a failure from among the burst's other replies.
    assert any(len(burst) > request.index for request, burst in zip(plan.fired, hit, strict=True))
    failed = [i for burst in hit for i in burst if i.outcome not in ("ok", "unread")]
    assert failed, f"no request of the faulted bursts failed: {hit}"
    if case == "delete applied, reply lost":
        # Redone after the lost reply: found gone, acked, not deleted twice.
        lost = {i.request.path for i in client.faulted()}
        gone = {rig.paths[r.info.ledger_id] for r in recorder.results if r.info} & lost
        assert gone and all(
            Outcome.ALREADY_GONE in recorder.of(ledger)
            for ledger, path in rig.paths.items()
            if path in lost
        )


@pytest.mark.parametrize("how", ["its reads keep failing", "its znode is corrupt"])
def test_one_bad_ledger_in_a_batch_holds_back_no_other(rig: Rig, how: str) -> None:
    """The batch fails past its retries, is redone one ledger at a time: the others are
    deleted, the bad one is handed back (never deleted while it cannot be read), and it is
    deleted once readable again, or archived if it never is."""
    bad = sorted(rig.released)[len(rig.released) // 2]
    path = rig.paths[bad]
    plan = Times(lambda r: r.op == "get" and r.path == path, refused, 10**9, 10**9)
    overrides: dict[str, object] = {}
    if how == "its znode is corrupt":
        plan.armed = False
        rig.znodes.client.set(path, b"not ledger metadata")
        overrides["max_reconsume_times_of_two_phase_deletion"] = 2
    recorder = Recorder()
    worker, client = rig.worker(plan, recorder, **overrides)
    try:
        rig.wait_gone(rig.released - {bad})
        recorder.wait_for(lambda _: Outcome.RECONSUMED in recorder.of(bad))
        assert bad in rig.znodes.ids()
        if how == "its reads keep failing":
            assert any(len(client.burst(r.burst)) > 1 for r in plan.fired), "never in a batch"
            plan.armed = False
            rig.wait_gone({bad})
        else:
            recorder.wait_for(lambda _: Outcome.ARCHIVED in recorder.of(bad))
    finally:
        worker.stop()

    rig.assert_referenced_intact()
    # Its batch-mates were settled in the same pass, not handed back with it.
    held_back = [i for i in rig.released - {bad} if Outcome.RECONSUMED in recorder.of(i)]
    assert held_back == []
    if how == "its reads keep failing":
        assert_every_message_settled(rig, recorder)
    else:
        assert bad in rig.znodes.ids()
        assert recorder.of(bad)[-1] is Outcome.ARCHIVED
        assert Outcome.DELETED not in recorder.of(bad)
        rig.released.discard(bad)
        assert_every_message_settled(rig, recorder)


@pytest.mark.parametrize("op", ["get", "delete"])
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_crash_after_part_of_a_batch_was_applied(rig: Rig, op: str) -> None:
    """The handler thread dies before issuing the third request of a burst, once the server
    applied the first two: nothing was acked, so a new worker gets the whole batch again."""
    plan = Times(lambda r: r.op == op and r.index == 3, crash_after_applied)
    first_results = Recorder()
    first, client = rig.worker(plan, first_results)
    try:
        wait_until(lambda: not first.live()[0], 60, "the crash")
    finally:
        first.stop()
    (crash,) = plan.fired
    before = [i for i in client.burst(crash.burst) if i.fault is None]
    assert [i.request.op for i in before] == [op, op]
    assert all(i.outcome == "unread" for i in before)
    ids = {ledger for ledger, path in rig.paths.items() if path in {i.request.path for i in before}}
    assert all(first_results.of(ledger) == [] for ledger in ids), "acked before the crash"
    if op == "delete":
        assert not ids & rig.znodes.ids(), "the server did not apply the deletes sent"

    second_results = Recorder()
    rig.worker(no_faults, second_results)
    rig.wait_gone(rig.released)
    second_results.wait_for(lambda _: all(second_results.of(ledger) for ledger in ids))
    rig.assert_referenced_intact()
    assert_every_message_settled(rig, first_results, second_results)
    expected = Outcome.ALREADY_GONE if op == "delete" else Outcome.DELETED
    assert {ledger: second_results.of(ledger) for ledger in ids} == {i: [expected] for i in ids}


@pytest.mark.parametrize("change", ["rewritten", "re-owned"])
def test_ledger_changed_between_batch_read_and_batch_delete_is_not_deleted(
    rig: Rig, namespace: NamespaceName, change: str
) -> None:
    """Another writer sets the ledger's znode after the batch read it, just before the batch
    delete: the delete, at the version read, comes back changed and the ledger stays. Once
    read again it is deleted if still this topic's, and archived if now another topic's."""
    victim = sorted(rig.released)[len(rig.released) // 2]
    path = rig.paths[victim]
    other = TopicName(namespace, "someone-else")

    def rewrite(request: Request) -> None:
        data, _ = rig.znodes.client.get(path)
        if change == "re-owned":
            custom = pulsar_custom_metadata(other, LedgerComponent.MANAGED_LEDGER)
            data = ledger_metadata(custom)
        rig.znodes.client.set(path, data)

    plan = Times(lambda r: r.op == "delete" and r.path == path, after(rewrite))
    recorder = Recorder()
    seen: list[tuple[Outcome, str, bool]] = []

    def observe(result: HandlingResult) -> None:
        if result.info is not None and result.info.ledger_id == victim:
            seen.append((result.outcome, result.reason, rig.znodes.client.exists(path) is not None))
        recorder(result)

    worker, client = rig.worker(plan, observe)
    try:
        rig.wait_gone(rig.released - {victim})
        final = Outcome.DELETED if change == "rewritten" else Outcome.ARCHIVED
        recorder.wait_for(lambda _: final in recorder.of(victim))
    finally:
        worker.stop()

    (refused_delete,) = [i for i in client.faulted()]
    assert refused_delete.outcome == "BadVersionError"
    outcome, reason, existed = seen[0]
    assert (outcome, existed) == (Outcome.RECONSUMED, True), seen
    assert "changed" in reason
    rig.assert_referenced_intact()
    if change == "rewritten":
        assert victim not in rig.znodes.ids()
        assert_every_message_settled(rig, recorder)
    else:
        assert victim in rig.znodes.ids(), "deleted although it is now another topic's"
        assert [o for o, _, _ in seen] == [Outcome.RECONSUMED, Outcome.ARCHIVED]
        rig.released.discard(victim)
        assert_every_message_settled(rig, recorder)
