"""`enqueue` while `run` is up on the embedded broker, as an operator tries it by hand: real
ZooKeeper, pulsar-lite, both commands as processes.

pulsar-lite keys a Shared subscription's consumers by the client's consumer id, and every
client counts from 0: `enqueue`'s subscription set-up collided with the running worker's
consumers ("Consumer 0 already exists"), waited 30 s and said "phase one failed" with rc 2,
though one of its two ledgers had been enqueued and was later deleted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, zookeeper_backend
from harness.process import start_sidecar, stop_sidecar, wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder

# Well below the client's 30 s operation time-out, which the collision used to run into.
PROMPTLY = 15.0


@pytest.fixture
def zk_backend(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[Backend]:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    yield backend
    backend.ledgers.close()
    backend.metadata.close()


def test_enqueue_next_to_a_running_worker_enqueues_both_and_both_are_handled(
    zk_backend: Backend, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    seeder = TopicSeeder(zk_backend.metadata, zk_backend.factory)
    seeded = seeder.seed(TopicName(namespace, "orders"), ledgers=4)
    released = seeded.ledgers[:2]
    seeder.release(seeded, released)  # trimmed: no longer referenced, still in BookKeeper
    settings = {"sendDelaySecondsOfTwoPhaseDeletion": 1, "deletionNamespaces": str(namespace)}
    sidecar = start_sidecar(zk_backend.metadata_url, broker.service_url, **settings)
    try:
        stderr = sidecar.stderr
        assert stderr is not None
        wait_until(lambda: '"event": "subscribed"' in stderr.readline(), 60, "the subscription")
        began = time.monotonic()
        enqueued = subprocess.run(
            [sys.executable, "-m", "ledger_janitor", "enqueue", seeded.topic.full_name,
             *map(str, released), "--metadata-store", zk_backend.metadata_url,
             "--broker-url", broker.service_url,
             *(a for k, v in settings.items() for a in ("--set", f"{k}={v}"))],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )  # fmt: skip
        took = time.monotonic() - began
        assert enqueued.returncode == 0, enqueued.stderr
        assert took < PROMPTLY, f"enqueue took {took:.1f} s"
        lines = enqueued.stdout.splitlines()
        assert [line.split(" as ")[0] for line in lines] == [
            f"enqueued MANAGED_LEDGER LEDGER {ledger} of {seeded.topic}" for ledger in released
        ]
        assert "error" not in enqueued.stderr

        wait_until(
            lambda: not any(zk_backend.exists(ledger) for ledger in released),
            60,
            f"ledgers {released} deleted by the running worker",
            poll=0.2,
        )
    finally:
        stop_sidecar(sidecar)
    assert all(zk_backend.exists(ledger) for ledger in seeded.referenced())
