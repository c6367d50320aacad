"""SIGKILL `ledger-janitor run` at random points mid-batch, restart it, repeat.

Each kill lands wherever the batch happens to be: mid-deletion, between a deletion and its
ack, mid-reconsume, mid-archive. After every kill, nothing referenced is gone; at the end
every released ledger is deleted (exactly once, on SQLite, which logs each real deletion),
every unreleased one and the cross-tenant victim are archived and intact, and no process
died of an exception. The seed is printed, and RELIABILITY_SEED=N replays it.

pulsar-lite does not drop the consumers of a connection that ended in a reset (what a
SIGKILL with unread data produces): they stay registered, keep their unacked messages and
their consumer ids for good, so the restarted worker gets nothing (seen for over two minutes).
A real broker drops them at once and redelivers. So after each kill the test restarts its
private pulsar-lite, which redelivers every unacked message, as a real broker would.
"""

from __future__ import annotations

import os
import random
from functools import partial
from pathlib import Path

import pytest

from deletion.domain import message
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory
from harness.process import wait_until
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.oracle import pending
from tests.reliability.scenario import Scenario, build_scenario
from tests.reliability.support import (
    WorkerProcess,
    archived_ids,
    read_archive,
    scaled,
    start_worker,
    wait_ready,
)

pytestmark = pytest.mark.timeout(scaled(120, 1200))

KILLS = scaled(3, 12)
RELEASED_PER_TOPIC = scaled(100, 400)
SETTINGS: dict[str, object] = {
    "sendDelaySecondsOfTwoPhaseDeletion": 0,
    "reconsumeLaterSecondsOfTwoPhaseDeletion": 0,
    "maxReconsumeTimesOfTwoPhaseDeletion": 3,
    "minLedgerAgeSecondsOfTwoPhaseDeletion": 0,  # ledgers of deleted topics, orphans
    "ledgerDeletionWorkerThreadsOfTwoPhaseDeletion": 4,
    "ledgerDeletionBatchSizeOfTwoPhaseDeletion": 16,  # kills land mid-run, not after it
}


def test_sigkill_at_random_points_loses_nothing_and_deletes_nothing_referenced(
    backend: Backend, private_broker: EmbeddedBroker, namespace: NamespaceName, tmp_path: Path
) -> None:
    seed = int(os.environ.get("RELIABILITY_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    janitor = JanitorFactory(backend, private_broker.service_url, tmp_path)
    try:
        sidecar = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=0)
        other = NamespaceName(namespace.tenant, "other")
        scenario = build_scenario(
            backend,
            sidecar,
            [namespace, other],
            topics_per_namespace=2,
            released_per_topic=RELEASED_PER_TOPIC,
            unreleased_per_topic=3,
            deleted_topics=True,
        )
        # Another namespace's referenced ledger, named on this namespace's deletion topic.
        victim_topic = next(t for t in scenario.topics if t.namespace == other)
        victim = scenario.truth[victim_topic].ledgers[-1]
        hostile = pending(TopicName(other, victim_topic.local_name), victim)
        sidecar.pool.send(namespace.deletion_topic, message.encode(hostile), {}).result(10)

        total = len(scenario.released)
        run = partial(start_worker, directory=tmp_path, metadata_url=backend.metadata_url)
        url = private_broker.service_url
        logs, at_kill = [], []
        # The first kill in the first half: kills drawn only near the end (seed 695310761:
        # 345, 397 and 416 of 420) all found a worker done with every deletion, since it
        # deletes dozens while `reached` reads the store once.
        points = sorted([rng.randrange(total // 2), *rng.sample(range(total), KILLS - 1)])
        for n, threshold in enumerate(points):
            worker = run(f"killed-{n}", broker_url=url, settings=SETTINGS)
            logs.append(worker.log)
            wait_ready(worker)
            wait_until(partial(reached, scenario, threshold, worker), 60, f"seed {seed}")
            worker.assert_alive()
            worker.kill()
            at_kill.append(len(scenario.gone()))
            scenario.assert_safe()
            private_broker.stop()  # see the module's docstring
            private_broker.start()

        final = run("final", broker_url=url, settings=SETTINGS)
        logs.append(final.log)
        wait_until(lambda: scenario.gone() == scenario.released, 120, f"deletions, seed {seed}")
        expected_archived = scenario.unreleased | {victim}
        found = read_archive(
            sidecar.client,
            scenario.namespaces,
            lambda found: expected_archived <= archived_ids(found),
            timeout=120,
        )
        final.stop()
    finally:
        janitor.close()

    scenario.assert_safe()
    assert victim in scenario.raw.alive()
    assert archived_ids(found) == expected_archived, f"seed {seed}"
    reasons = {a.ledger_id: a.reason for a in found}
    assert "outside namespace" in reasons[victim]
    assert all(reasons[i].startswith("gave up after 3 reconsumes") for i in scenario.unreleased)
    if backend.name == "sqlite":
        scenario.assert_exactly_once()
    for log in logs:
        assert "Traceback" not in log.read_text(), f"{log.name} (seed {seed})"
    # The kills landed mid-batch: after some deletions and before the last.
    assert any(0 < n < total for n in at_kill), (at_kill, seed)
    print(f"\nseed {seed}: killed at {at_kill} of {total} deletions")


def reached(scenario: Scenario, deletions: int, worker: WorkerProcess) -> bool:
    return len(scenario.gone()) >= deletions or worker.process.poll() is not None
