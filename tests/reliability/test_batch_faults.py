"""Faults inside the real pipelined ZooKeeper batch path, under a real worker and broker.

Phase two reads a batch's ledger znodes with one `get_many` (a multiRead request) and deletes
them with one versioned `delete_many` (a multi request; after a failed multi, the rest one
by one, pipelined). Here the kazoo client under our adapter fails
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

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.outcome import Outcome, Result
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Recorder
from harness.process import wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.scenario import build_scenario
from tests.reliability.support import scaled
from tests.reliability.zk_faults import (
    Fault,
    FaultyKazoo,
    Request,
    Times,
    after,
    connection_dropped,
    crash_after_applied,
    crash_after_sent,
    ledger_metadata,
    refused,
    reply_lost,
    session_expired,
)
from tests.reliability.zk_rig import ZkRig, wait_outcomes, zk_rig

pytestmark = pytest.mark.timeout(scaled(120, 600))

RELEASED_PER_TOPIC = scaled(12, 100)
BATCH = 8
SETTINGS: dict[str, object] = {
    "send_delay_seconds_of_two_phase_deletion": 0,
    "clock_skew_allowance_seconds_of_two_phase_deletion": 0,
    "reconsume_later_seconds_of_two_phase_deletion": 0,
    "max_reconsume_times_of_two_phase_deletion": 50,
    # One handler thread, so a batch is whatever piled up while the previous one ran.
    "ledger_deletion_worker_threads_of_two_phase_deletion": 1,
    "ledger_deletion_batch_size_of_two_phase_deletion": BATCH,
}
SETTLED = (Outcome.DELETED, Outcome.ALREADY_GONE)
# Held back until this many messages arrived: the first batch is whatever came first, the
# second (its ledger read is burst 3) is full.
BACKLOG = 1 + 8 + 1


def no_faults(request: Request) -> Fault | None:
    return None


@contextmanager
def planted(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> Iterator[ZkRig]:
    """Two topics, each with released (enqueued) ledgers and two it keeps, cursors and a
    schema (scenario.py)."""
    with zk_rig(zookeeper, broker, chroot, tmp_path) as made:
        producer = made.janitor.sidecar(**SETTINGS)
        backend = made.janitor.backend
        scenario = build_scenario(backend, producer, [namespace], 2, RELEASED_PER_TOPIC)
        made.released = scenario.released
        made.referenced = scenario.truth.referenced()
        made.paths = made.znodes.paths()
        assert made.released | made.referenced == set(made.paths), "planting went wrong"
        yield made


@pytest.fixture
def rig(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> Iterator[ZkRig]:
    with planted(zookeeper, broker, chroot, namespace, tmp_path) as made:
        yield made


def assert_every_message_settled(rig: ZkRig, *recorders: Recorder) -> None:
    """Each released ledger's message ended deleted or already gone: none lost or archived."""
    wait_outcomes(rig.released, *recorders, final=SETTLED)


TRANSIENT: dict[str, tuple[str, Callable[[ZkRig], Fault], int]] = {
    "get refused": ("get", lambda rig: refused, 3),
    "get reply lost": ("get", lambda rig: reply_lost, 3),
    "delete refused": ("delete", lambda rig: refused, 3),
    "delete applied, reply lost": ("delete", lambda rig: reply_lost, 3),
    "connection dropped after a get": ("get", lambda rig: connection_dropped, 2),
    "connection dropped after a delete": ("delete", lambda rig: connection_dropped, 2),
    "session expired after a delete": ("delete", lambda rig: session_expired(rig.server), 2),
}


@pytest.mark.parametrize("case", TRANSIENT)
def test_transient_fault_in_the_middle_of_a_pipelined_batch(rig: ZkRig, case: str) -> None:
    """The batch is retried, or redone one ledger at a time, or handed back and delivered
    again; a delete applied whose reply was lost is found gone the next time."""
    op, make, times = TRANSIENT[case]
    # From the second full batch on, its second request or later: an earlier one of the
    # same batch is in flight, and more will follow it.
    plan = Times(lambda r: r.burst >= 3 and r.op == op and r.index >= 2, make(rig), times)
    recorder = Recorder()
    worker, client = rig.worker(plan, recorder, SETTINGS, backlog=BACKLOG)
    try:
        rig.wait_gone(rig.released)
        # A delete applied whose reply the broken connection lost settles on the message's
        # next delivery, which may come after the ledger is gone: the worker keeps running.
        assert_every_message_settled(rig, recorder)
        alive, detail = worker.live()
    finally:
        worker.stop()

    rig.assert_referenced_intact()
    assert alive, detail
    assert len(plan.fired) == times, f"the fault fired {len(plan.fired)} times"
    hit = [client.burst(request.burst) for request in plan.fired]
    # Mid-batch: requests of the same burst were issued before and after the faulted one,
    # so the adapter had to collect a failure from among the burst's other replies.
    assert all(len(burst) > request.index for request, burst in zip(plan.fired, hit, strict=True))
    failed = [i for burst in hit for i in burst if i.outcome not in ("ok", "unread")]
    assert failed, f"no request of the faulted bursts failed: {hit}"
    assert op != "get" or client.multi_reads > 0, "the batch reads did not go by multiRead"
    assert op != "delete" or client.multi_deletes > 0, "the batch deletes did not go by multi"
    if case == "delete applied, reply lost":
        # Redone after the lost reply: found gone, and acked as such.
        lost = {rig.ledger_of(i.request.path) for i in client.faulted()}
        assert {i: recorder.of(i)[-1] for i in lost} == dict.fromkeys(lost, Outcome.ALREADY_GONE)


def test_server_restarted_in_the_middle_of_a_batch(
    private_zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    """The ZooKeeper server is stopped after the second delete of a burst was issued, and
    started again: what is issued meanwhile (the rest of the burst, its retry, the next
    batch's in-use look-up) waits for the server, what was in flight is lost or answered;
    every batch is settled either way, those behind the interrupted one included."""
    settled_at_stop: list[int] = []
    recorder = Recorder()
    restarting = threading.Thread(target=private_zookeeper.start)

    def stop_then_restart(client: FaultyKazoo, request: Request, send: Callable[[], Any]) -> Any:
        reply = send()
        settled_at_stop.append(sum(recorder.count(outcome) for outcome in SETTLED))
        private_zookeeper.stop()
        restarting.start()
        return reply

    once = Times(lambda r: r.op == "delete" and r.index == 2, stop_then_restart)
    with planted(private_zookeeper, broker, chroot, namespace, tmp_path) as rig:
        worker, _ = rig.worker(once, recorder, SETTINGS, backlog=BACKLOG)
        try:
            rig.wait_gone(rig.released)
            assert_every_message_settled(rig, recorder)  # with the worker still running
            alive, detail = worker.live()
        finally:
            worker.stop()
            restarting.join(60)
        rig.assert_referenced_intact()
        # More than the interrupted batch was left to do with the server down.
        assert settled_at_stop[0] + 2 * BATCH < len(rig.released), settled_at_stop
    assert alive, detail
    assert len(once.fired) == 1


@pytest.mark.parametrize("how", ["its reads keep failing", "its znode is corrupt"])
def test_one_bad_ledger_in_a_batch_holds_back_no_other(rig: ZkRig, how: str) -> None:
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
    worker, client = rig.worker(plan, recorder, {**SETTINGS, **overrides}, backlog=BACKLOG)
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


CRASHES: dict[str, tuple[str, Fault, Outcome]] = {
    "before its reads were sent": ("get", crash_after_applied, Outcome.DELETED),
    "before its deletes were sent": ("delete", crash_after_applied, Outcome.DELETED),
    "after its deletes were applied": ("delete", crash_after_sent, Outcome.ALREADY_GONE),
}


@pytest.mark.parametrize("when", CRASHES)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_crash_in_the_middle_of_a_batch(rig: ZkRig, when: str) -> None:
    """The handler thread dies at the third ledger of a burst. A batch's reads go as one
    multiRead and its deletes as one multi, so it dies before the request left, or after
    the server applied it and before its reply was read. Nothing was acked, so a new worker
    gets the whole batch again: it deletes what was not applied and finds gone what was."""
    op, crash, expected = CRASHES[when]
    plan = Times(lambda r: r.op == op and r.index == 3, crash)
    first_results = Recorder()
    first, client = rig.worker(plan, first_results, SETTINGS, backlog=BACKLOG)
    try:
        wait_until(lambda: not first.live()[0], 60, "the crash")
    finally:
        first.stop()
    (fired,) = plan.fired
    # The ledgers' requests: a batch's reads also read BookKeeper's LAYOUT (checked with
    # every read, deletion/adapters/layout.py).
    known = set(rig.paths.values())
    batch = [i for i in client.burst(fired.burst) if i.request.op == op and i.request.path in known]
    assert len(batch) >= 3
    applied = expected is Outcome.ALREADY_GONE
    assert {i.outcome for i in batch} == {"unread" if applied else "unsent"}
    ids = {rig.ledger_of(i.request.path) for i in batch}
    assert all(first_results.of(ledger) == [] for ledger in ids), "acked before the crash"
    assert (ids & rig.znodes.ids()) == (set() if applied else ids)
    assert op != "delete" or client.multi_deletes > 0

    second_results = Recorder()
    rig.worker(no_faults, second_results, SETTINGS)
    rig.wait_gone(rig.released)
    second_results.wait_for(lambda _: all(second_results.of(ledger) for ledger in ids))
    rig.assert_referenced_intact()
    assert_every_message_settled(rig, first_results, second_results)
    assert {ledger: second_results.of(ledger) for ledger in ids} == {i: [expected] for i in ids}


@pytest.mark.parametrize("change", ["rewritten", "re-owned"])
def test_ledger_changed_between_batch_read_and_batch_delete_is_not_deleted(
    rig: ZkRig, namespace: NamespaceName, change: str
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
    seen: list[tuple[Outcome, str, bool]] = []

    class Watching(Recorder):
        def record(self, result: Result) -> None:
            if result.info is not None and result.info.ledger_id == victim:
                exists = rig.znodes.client.exists(path) is not None
                seen.append((result.outcome, result.reason, exists))
            super().record(result)

    recorder = Watching()
    worker, client = rig.worker(plan, recorder, SETTINGS, backlog=BACKLOG)
    try:
        rig.wait_gone(rig.released - {victim})
        ended = (Outcome.DELETED, Outcome.ALREADY_GONE, Outcome.ARCHIVED)
        recorder.wait_for(lambda _: any(o in ended for o in recorder.of(victim)))
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
