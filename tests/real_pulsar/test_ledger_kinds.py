"""A compacted ledger left behind, on a real broker (deletion/domain/kinds.py).

An interrupted compaction leaves the ledger its phase two created, recorded nowhere (planted
here with BookKeeper's own Java client and the metadata AbstractTwoPhaseCompactor writes:
LeakMaker). `ledger-janitor enqueue --kind COMPACTED_LEDGER` names it and `ledger-janitor run`
works it: kept while no later compaction is recorded above it (the topic's `__compaction`
cursor could still take its acknowledgement), deleted once one is (its acknowledgement would
now be below the cursor's). The oracle is the broker: its ZooKeeper's `/ledgers`, its
internalStats, and the compacted view it serves, read back after."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pulsar
from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.process import run_cli, start_sidecar
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.real_pulsar.test_zombies import Log

AGE_RULE = 3  # seconds: the planted ledger is older than this before it could go


def _send(client: pulsar.Client, topic: TopicName, values: dict[str, str]) -> None:
    producer = client.create_producer(topic.full_name, batching_enabled=False)
    for key, value in values.items():
        producer.send(value.encode(), partition_key=key)
    producer.close()


def _view(client: pulsar.Client, topic: TopicName, count: int) -> dict[str, str]:
    """The compacted view the broker serves: each key's latest value."""
    reader = client.subscribe(
        topic.full_name, f"view-{time.monotonic_ns()}", is_read_compacted=True,
        initial_position=pulsar.InitialPosition.Earliest,
    )  # fmt: skip
    seen = {m.partition_key(): m.data().decode() for m in rig.receive_all(reader, count)}
    reader.unsubscribe()
    return seen


def test_an_interrupted_compactions_ledger_goes_once_a_later_compaction_is_recorded_above_it(
    java: JavaPrograms, real_pulsar: RealPulsar, broker_admin: BrokerAdmin,
    real_namespace: NamespaceName, pulsar_zk: KazooClient, client_log: Path,
) -> None:  # fmt: skip
    topic = TopicName(real_namespace, "prices")
    client = rig.client(real_pulsar, client_log)
    client.subscribe(topic.full_name, "keep").close()  # nothing is trimmed under the test
    first = {f"k{i}": f"v1-{i}" for i in range(5)}
    _send(client, topic, first)
    read = rig.compact(broker_admin, topic)  # the one the topic reads now: enqueued too
    (made,) = java.run("LeakMaker", real_pulsar.zookeeper_hosts, topic.full_name, "-", 1, 4096)
    (straggler,) = map(int, made["ledgers"])
    done = run_cli(
        "enqueue", topic.full_name, str(straggler), str(read), "--kind", "COMPACTED_LEDGER",
        "--metadata-store", real_pulsar.metadata_url, "--broker-url", real_pulsar.service_url,
        "--set", "sendDelaySecondsOfTwoPhaseDeletion=1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    time.sleep(AGE_RULE + 1)

    sidecar = start_sidecar(
        real_pulsar.metadata_url, real_pulsar.service_url,
        deletionNamespaces=str(real_namespace),
        sendDelaySecondsOfTwoPhaseDeletion=1,
        reconsumeLaterSecondsOfTwoPhaseDeletion=1,
        maxReconsumeTimesOfTwoPhaseDeletion=200,  # never archived while the test runs
        minLedgerAgeSecondsOfTwoPhaseDeletion=AGE_RULE,
    )  # fmt: skip
    log = Log(sidecar)
    try:
        # No compaction recorded above it: kept, however old.
        rig.wait_until(
            lambda: len(_rulings(log, straggler)) >= 2, 120,
            f"the worker's rulings on the planted compacted ledger {straggler}",
        )  # fmt: skip
        rig.wait_until(lambda: len(_rulings(log, read)) >= 2, 60, f"the rulings on {read}")
        for kept in (straggler, read):
            assert "may still record it" in str(_rulings(log, kept)[-1]["reason"])
        assert {straggler, read} <= rig.bookkeeper_ledgers(pulsar_zk)

        # The topic moves on: a new data ledger (reloaded), new values, a new compaction,
        # and its cursor closed (unloaded), so that its znode has what it recorded.
        path = broker_admin.topic_path(topic)
        broker_admin.put(f"{path}/unload")
        second = {f"k{i}": f"v2-{i}" for i in range(3, 8)}
        _send(client, topic, second)
        live = rig.compact(broker_admin, topic)
        broker_admin.put(f"{path}/unload")
        rig.wait_until(
            lambda: straggler not in rig.bookkeeper_ledgers(pulsar_zk), 120,
            f"the planted compacted ledger {straggler} gone from the cluster's /ledgers",
        )  # fmt: skip
    finally:
        log.stop(sidecar)
        print("".join(log.lines[-20:]))
    # The one read before is superseded now: the broker deletes it itself, or we do.
    assert straggler in {e["ledger_id"] for e in log.events("deleted")} <= {straggler, read}
    # What the broker references, read before what exists: reading its stats loads the
    # unloaded topic, which makes a ledger.
    referenced = rig.ledgers_of(broker_admin, topic)
    alive = rig.bookkeeper_ledgers(pulsar_zk)
    assert live in alive and referenced <= alive
    # The compacted view is whole: every key's latest value.
    assert _view(client, topic, 8) == {**first, **second}
    client.close()


def _rulings(log: Log, ledger: int) -> list[dict[str, Any]]:
    return [e for e in log.events("reconsumed") if e.get("ledger_id") == ledger]
