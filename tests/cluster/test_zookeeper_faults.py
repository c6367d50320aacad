"""Scenario 6 of the cluster: ZooKeeper fails under a sidecar that is deleting.

- The ZooKeeper leader is killed mid-batch: every member drops its clients while a new leader
  is elected, so the sidecar's connection breaks and is made again.
- A sidecar is paused (SIGSTOP) past its ZooKeeper session and resumed: its session expired
  meanwhile, and it must act on nothing it read before the pause.

Either way, nothing read on the old connection is acted on, and with the age rule on nothing
is decided until the new connection is `metadataStoreSessionTimeoutMillis` old: a quorum loss
keeps the brokers' sessions, so their writes held up by it land right after it
(deletion/domain/decision.py). The oracle is the cluster: its ZooKeeper's `/ledgers` read raw,
the brokers' internalStats, the messages read back; and the sidecar's own log, for when it
deleted what after which reconnection."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pulsar
import pytest
from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.process import run_cli, wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster
from harness.pulsar_cluster.sidecar import SidecarProcess
from harness.pulsar_dist import distribution
from tests.cluster.conftest import client
from tests.real_pulsar import rig
from tests.reliability import oracle

SETTLE = 12.0  # metadataStoreSessionTimeoutMillis, in seconds: the sidecar's start within it
AGE_RULE = 3  # minLedgerAgeSecondsOfTwoPhaseDeletion: the planted leaks are older by then
LEAKS = 30
JAVA = Path(__file__).parents[1] / "real_pulsar" / "java"


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> JavaPrograms:
    return JavaPrograms(JAVA, tmp_path_factory.mktemp("java"), distribution()).compile()


@pytest.fixture
def zk(pulsar_cluster: PulsarCluster) -> Iterator[KazooClient]:
    """The cluster's own ZooKeeper, raw: the ground truth of what ledgers exist."""
    started = KazooClient(hosts=pulsar_cluster.zookeeper_hosts, timeout=30)
    started.start(timeout=60)
    yield started
    started.stop()
    started.close()


@dataclass
class Work:
    """A live topic with its messages and the ledgers the brokers say it references, and
    leaks of it planted with BookKeeper's own client and enqueued."""

    topic: TopicName
    sent: list[Any]
    referenced: set[int]
    leaks: set[int]


def _work(
    cluster: PulsarCluster, admin: ClusterAdmin, ns: NamespaceName, java: JavaPrograms, log: Path
) -> Work:
    topic = TopicName(ns, "live")
    producer_client = client(cluster, log)
    sent = rig.produce(producer_client, topic, 30)
    producer_client.close()
    referenced = rig.ledgers_of(admin, topic)
    (made,) = java.run("LeakMaker", cluster.zookeeper_hosts, oracle.ml_name(topic), "-", LEAKS,
                       4096, timeout=600)  # fmt: skip
    leaks = {int(ledger) for ledger in made["ledgers"]}
    done = run_cli(
        "enqueue", topic.full_name, *map(str, sorted(leaks)),
        "--metadata-store", cluster.metadata_url, "--broker-url", cluster.service_url,
        "--set", "sendDelaySecondsOfTwoPhaseDeletion=2", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return Work(topic, sent, referenced, leaks)


def _start(sidecar: SidecarProcess, ns: NamespaceName, session_seconds: int) -> None:
    """One worker thread and small batches, so that the work spans the fault; the age rule
    and the settling on; `operationTimeoutSeconds` is also the ZooKeeper session's time-out."""
    sidecar.start(
        deletionNamespaces=str(ns),
        minLedgerAgeSecondsOfTwoPhaseDeletion=AGE_RULE,
        metadataStoreSessionTimeoutMillis=int(SETTLE * 1000),
        ledgerDeletionWorkerThreadsOfTwoPhaseDeletion=1,
        ledgerDeletionBatchSizeOfTwoPhaseDeletion=2,
        operationTimeoutSeconds=session_seconds,
    )


def _holding(sidecar: SidecarProcess, work: Work, zk: KazooClient) -> None:
    """Until the sidecar holds the work: it received the pending deletions and handed them
    back until its connection has settled. A deleting sidecar cannot be caught mid-batch
    (it deletes the 30 in under 0.1 s), so the fault strikes here, between its reads and
    its decisions, with every leak still to delete."""

    def held_or_deleted() -> bool:
        reconsumed = any(e["event"] == "reconsumed" for e in _events(sidecar))
        return reconsumed or not work.leaks <= rig.bookkeeper_ledgers(zk)

    wait_until(held_or_deleted, 240, "the sidecar holding the pending deletions", poll=0.1)
    assert work.leaks <= rig.bookkeeper_ledgers(zk), "deleted before its connection settled"


def _events(sidecar: SidecarProcess) -> list[dict[str, Any]]:
    events = []
    for line in sidecar.log_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            stamp = entry.get("timestamp", "").replace("Z", "+00:00")
            entry["at"] = datetime.fromisoformat(stamp).timestamp() if stamp else 0.0
            events.append(entry)
    return events


def _check_after(sidecar: SidecarProcess, fault_at: float, done_before: set[int]) -> dict[str, Any]:
    """Every deletion after the fault came at least SETTLE after the connection it was
    decided on was made again; the figures of the fault. `done_before`: ledgers already gone
    when the fault struck (their delete was sent before it, its line may come after)."""
    events = _events(sidecar)
    reconnects = [e["at"] for e in events if e["event"] == "zookeeper connected again"]
    assert [at for at in reconnects if at > fault_at], (
        "the sidecar's ZooKeeper connection did not break:\n" + sidecar.log_tail()
    )
    deleted_after = [
        e
        for e in events
        if e["event"] == "deleted" and e["at"] > fault_at and e["ledger_id"] not in done_before
    ]
    assert deleted_after, sidecar.log_tail()
    for entry in deleted_after:
        made_again = max((at for at in reconnects if at <= entry["at"]), default=0.0)
        assert made_again > fault_at, f"deleted before any reconnection: {entry}"
        # The log's clock is the one the settling is measured on; a 0.5 s margin for the
        # time between the decision and its log line going the other way cannot occur.
        assert entry["at"] - made_again >= SETTLE, (
            f"ledger {entry['ledger_id']} deleted {entry['at'] - made_again:.1f} s after "
            f"the reconnection, within the {SETTLE:.0f} s settling"
        )
    return {
        "work continued after (s)": round(min(e["at"] for e in deleted_after) - fault_at, 1),
        "deleted after the fault": len(deleted_after),
        "reconsumed": sum(e["event"] == "reconsumed" for e in events),
        "archived": sum(e["event"] == "archived" for e in events),
    }


def _settled(
    cluster: PulsarCluster, admin: ClusterAdmin, work: Work, zk: KazooClient, log: Path
) -> None:
    """Every leak gone; every ledger the brokers referenced before and reference now still
    there; every message still served."""
    wait_until(
        lambda: not work.leaks & rig.bookkeeper_ledgers(zk), 240,
        "every planted leak deleted", poll=1,
    )  # fmt: skip
    alive = rig.bookkeeper_ledgers(zk)
    assert work.referenced <= alive
    assert rig.ledgers_of(admin, work.topic) <= alive
    reader = client(cluster, log)
    try:
        consumer = reader.subscribe(
            work.topic.full_name, "keep", consumer_type=pulsar.ConsumerType.Shared
        )
        back = [m.data() for m in rig.receive_all(consumer, len(work.sent), timeout=120)]
        consumer.close()
    finally:
        reader.close()
    assert sorted(back) == sorted(work.sent)


def test_the_zookeeper_leader_killed_mid_batch(
    pulsar_cluster: PulsarCluster, cluster_admin: ClusterAdmin, cluster_namespace: NamespaceName,
    java: JavaPrograms, zk: KazooClient, sidecars: PulsarCluster, tmp_path: Path,
) -> None:  # fmt: skip
    cluster, ns = pulsar_cluster, cluster_namespace
    work = _work(cluster, cluster_admin, ns, java, tmp_path / "client.log")
    sidecar = cluster.sidecars[0]
    _start(sidecar, ns, session_seconds=30)
    _holding(sidecar, work, zk)
    leader = cluster.zookeeper_leader()
    fault_at = time.time()
    leader.kill()
    try:
        # Read as soon as a new leader serves: the sidecar deletes nothing until SETTLE after.
        done_before = work.leaks - rig.bookkeeper_ledgers(zk)
        _settled(cluster, cluster_admin, work, zk, tmp_path / "client.log")
    finally:
        leader.start()
    figures = _check_after(sidecar, fault_at, done_before)
    assert sidecar.running, sidecar.log_tail()
    print(f"leader {leader.name} killed mid-batch:", figures)


def test_a_sidecar_paused_past_its_session_acts_on_nothing_it_read_before(
    pulsar_cluster: PulsarCluster, cluster_admin: ClusterAdmin, cluster_namespace: NamespaceName,
    java: JavaPrograms, zk: KazooClient, sidecars: PulsarCluster, tmp_path: Path,
) -> None:  # fmt: skip
    cluster, ns = pulsar_cluster, cluster_namespace
    work = _work(cluster, cluster_admin, ns, java, tmp_path / "client.log")
    sidecar = cluster.sidecars[1]
    session = 6  # seconds: ZooKeeper's minimum is 2 ticks (4 s)
    _start(sidecar, ns, session_seconds=session)
    _holding(sidecar, work, zk)
    sidecar.pause()
    done_before = work.leaks - rig.bookkeeper_ledgers(zk)
    time.sleep(3 * session)  # well past its session: ZooKeeper expires it meanwhile
    fault_at = time.time()
    sidecar.resume()
    _settled(cluster, cluster_admin, work, zk, tmp_path / "client.log")
    events = _events(sidecar)
    assert any(e["event"] == "zookeeper session expired" and e["at"] >= fault_at for e in events)
    assert any(
        e["event"] == "zookeeper connected again" and e.get("new_session") for e in events
    ), sidecar.log_tail()
    figures = _check_after(sidecar, fault_at, done_before)
    assert sidecar.running, sidecar.log_tail()
    print(f"{sidecar.name} paused {3 * session} s:", figures)
