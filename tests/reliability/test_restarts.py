"""The services restart under a running worker: the broker, the ZooKeeper server, and the
ZooKeeper session (expired from outside, as a partition or a long GC pause would).

Each uses private instances, since the session's broker and ZooKeeper are shared. After each:
every referenced ledger still exists, every released one is deleted (exactly once where the
store logs deletions), every unreleased one archived, and phase one refused to commit while
the broker was away.
"""

from __future__ import annotations

import threading
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState

from core.errors import EnqueueError
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory, Recorder, zookeeper_backend
from harness.process import wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.oracle import pending
from tests.reliability.scenario import build_scenario
from tests.reliability.support import archived_ids, read_archive, scaled

pytestmark = pytest.mark.timeout(scaled(120, 600))

RELEASED_PER_TOPIC = scaled(150, 1000)


@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_broker_restart_mid_run(
    backend: Backend,
    private_broker: EmbeddedBroker,
    namespace: NamespaceName,
    tmp_path: Path,
    how: str,
) -> None:
    janitor = JanitorFactory(backend, private_broker.service_url, tmp_path)
    try:
        sidecar = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=0)
        scenario = build_scenario(
            backend, sidecar, [namespace], 2, RELEASED_PER_TOPIC, 2, deleted_topics=True
        )
        recorder = Recorder()
        janitor.worker(
            recorder,
            send_delay_seconds_of_two_phase_deletion=0,
            reconsume_later_seconds_of_two_phase_deletion=0,
            min_ledger_age_seconds_of_two_phase_deletion=0,
            # Small batches: the restart must land while work is still queued.
            ledger_deletion_batch_size_of_two_phase_deletion=8,
        )
        recorder.wait_for(lambda results: recorder.count(Outcome.DELETED) >= 50)
        assert private_broker.process is not None
        if how == "kill":
            private_broker.process.kill()
            private_broker.process.wait()
            private_broker.process = None
        else:
            private_broker.stop()
        during = len(scenario.gone())

        # Phase one while the broker is away: the send fails, so the commit never runs.
        late = TopicName(namespace, "late")
        scenario.truth.seed(late, 2, schema_versions=1)
        scenario.topics.append(late)
        impatient = janitor.sidecar(operation_timeout_seconds=1)
        with pytest.raises(EnqueueError):
            impatient.phase_one.enqueue_then_commit(
                [pending(late, scenario.truth[late].ledgers[0])],
                lambda: scenario.truth.release(late, scenario.truth[late].ledgers),
            )
        assert len(scenario.truth[late].ledgers) == 2  # the commit never ran

        private_broker.start()
        wait_until(lambda: scenario.gone() == scenario.released, 120, "every released deleted")
        found = read_archive(
            sidecar.client, [namespace], lambda found: scenario.unreleased <= archived_ids(found)
        )
    finally:
        janitor.close()
    assert 0 < during < len(scenario.released), "the restart did not land mid-batch"
    scenario.assert_safe()
    assert scenario.truth[late].referenced() <= scenario.raw.alive()
    assert archived_ids(found) == scenario.unreleased
    if backend.name == "sqlite":
        scenario.assert_exactly_once()


class SessionStates:
    """Kazoo's own notifications: LOST when the session expires, CONNECTED once renewed."""

    def __init__(self, client: KazooClient) -> None:
        self.client = client
        self.lost, self.connected = threading.Event(), threading.Event()
        self.suspended = threading.Event()
        client.add_listener(self._changed)

    def _changed(self, state: str) -> None:
        if state == KazooState.SUSPENDED:
            self.suspended.set()
        if state == KazooState.LOST:
            self.lost.set()
        elif state == KazooState.CONNECTED and self.lost.is_set():
            self.connected.set()

    def arm(self) -> int:
        self.lost.clear()
        self.connected.clear()
        return int(self.client.client_id[0])


def test_zookeeper_restart_mid_run(
    private_zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    """While ZooKeeper is down, kazoo holds metadata calls until it is back: the worker
    pauses (nothing is acked, nothing decided on missing data) and then carries on."""
    backend = zookeeper_backend(private_zookeeper.hosts, chroot)
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    try:
        sidecar = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=0)
        scenario = build_scenario(
            backend, sidecar, [namespace], 2, RELEASED_PER_TOPIC, 2, deleted_topics=True
        )
        worker_side = janitor.sidecar(
            send_delay_seconds_of_two_phase_deletion=0,
            reconsume_later_seconds_of_two_phase_deletion=0,
            min_ledger_age_seconds_of_two_phase_deletion=0,
            # Small batches: the outage must land while work is still queued.
            ledger_deletion_batch_size_of_two_phase_deletion=8,
        )
        clients = [worker_side.metadata.client, worker_side.ledgers._store.client]  # type: ignore[attr-defined]
        states = [SessionStates(client) for client in clients]
        recorder = Recorder()
        worker = worker_side.worker(observers=[recorder], refresh_interval_seconds=0.2)
        worker.start()
        recorder.wait_for(lambda results: recorder.count(Outcome.DELETED) >= 50)
        private_zookeeper.stop()
        for state in states:
            assert state.suspended.wait(30), "the worker never noticed the outage"
        during = recorder.count(Outcome.DELETED)
        private_zookeeper.start()
        wait_until(lambda: scenario.gone() == scenario.released, 120, "every released deleted")
        found = read_archive(
            sidecar.client, [namespace], lambda found: scenario.unreleased <= archived_ids(found)
        )
        worker.stop()
    finally:
        janitor.close()
    assert during < len(scenario.released), "the restart did not land mid-batch"
    scenario.assert_safe()
    assert archived_ids(found) == scenario.unreleased
    backend.ledgers.close()


def expire_session(client: KazooClient, hosts: str) -> None:
    """Close the session from a second client that joins it: the server expires it for the
    first, exactly as when a partition outlasts the session time-out."""
    session_id, password = client.client_id
    twin = KazooClient(hosts=hosts, client_id=(session_id, password))
    twin.start(timeout=15)
    twin.stop()
    twin.close()


def test_zookeeper_session_expiry_mid_run(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    try:
        sidecar = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=0)
        scenario = build_scenario(
            backend, sidecar, [namespace], 2, RELEASED_PER_TOPIC, 2, deleted_topics=True
        )
        recorder = Recorder()
        # A batch whose session broke is reconsumed ("the metadata store's connection is
        # broken") until the new session is up: with no reconsume delay, a reconnection slowed
        # by a loaded machine (the whole suite, once) used up all 3 reconsumes and archived
        # released ledgers. 2 s x 6 rides out 12 s.
        worker_side = janitor.sidecar(
            send_delay_seconds_of_two_phase_deletion=0,
            reconsume_later_seconds_of_two_phase_deletion=2,
            max_reconsume_times_of_two_phase_deletion=6,
            min_ledger_age_seconds_of_two_phase_deletion=0,
        )
        clients = [worker_side.metadata.client, worker_side.ledgers._store.client]  # type: ignore[attr-defined]
        states = [SessionStates(client) for client in clients]
        worker = worker_side.worker(observers=[recorder], refresh_interval_seconds=0.2)
        worker.start()
        expiries = 3
        step = len(scenario.released) // (expiries + 1)
        for n in range(1, expiries + 1):
            recorder.wait_for(partial(_at_least, recorder, n * step))
            for client, state in zip(clients, states, strict=True):
                old = state.arm()
                expire_session(client, zookeeper.hosts)
                assert state.lost.wait(30), "the session never expired"
                assert state.connected.wait(30), "no new session"
                assert client.client_id[0] != old
        # 2-5 s here, idle or loaded; its own deadline well inside pytest's, so that a stall
        # (once, at a load of 7 in the whole suite) says where the released ledgers are.
        try:
            wait_until(lambda: scenario.gone() == scenario.released, 75, "every released deleted")
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}: {_stalled(recorder, scenario.released - scenario.gone())}"
            ) from exc
        found = read_archive(
            sidecar.client, [namespace], lambda found: scenario.unreleased <= archived_ids(found)
        )
        worker.stop()
    finally:
        janitor.close()
    scenario.assert_safe()
    assert archived_ids(found) == scenario.unreleased
    backend.ledgers.close()


def _stalled(recorder: Recorder, missing: set[int]) -> str:
    """What the worker did with the ledgers still not deleted, and with everything."""
    results = list(recorder.results)
    seen = {
        ledger: [
            f"{r.outcome.value}: {r.reason}"
            for r in results
            if r.info and r.info.ledger_id == ledger
        ]
        for ledger in sorted(missing)[:3]
    }
    every = Counter(r.outcome.value for r in results)
    return f"{len(missing)} left; outcomes of some, with why: {seen}; all outcomes: {dict(every)}"


def _at_least(recorder: Recorder, count: int, results: object) -> bool:
    return recorder.count(Outcome.DELETED) >= count
