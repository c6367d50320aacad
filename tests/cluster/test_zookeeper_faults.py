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

import time
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName
from harness.java import JavaPrograms
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster, workload
from harness.pulsar_cluster.sidecar import SidecarProcess
from tests.cluster import rig as cluster_rig
from tests.real_pulsar import rig

SETTLE = workload.SETTLE


def _start(sidecar: SidecarProcess, ns: NamespaceName, session_seconds: int) -> None:
    workload.start_sidecar(sidecar, [ns], session_seconds)


def _check_after(sidecar: SidecarProcess, fault_at: float, done_before: set[int]) -> dict[str, Any]:
    """Every deletion after the fault came at least SETTLE after the connection it was
    decided on was made again; the figures of the fault. `done_before`: ledgers already gone
    when the fault struck (their delete was sent before it, its line may come after)."""
    found = sidecar.events()
    reconnects = [e["at"] for e in found if e["event"] == "zookeeper connected again"]
    assert [at for at in reconnects if at > fault_at], (
        "the sidecar's ZooKeeper connection did not break:\n" + sidecar.log_tail()
    )
    deleted_after = [
        e
        for e in found
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
        "reconsumed": sum(e["event"] == "reconsumed" for e in found),
        "archived": sum(e["event"] == "archived" for e in found),
    }


def test_the_zookeeper_leader_killed_mid_batch(
    pulsar_cluster: PulsarCluster, cluster_admin: ClusterAdmin, cluster_namespace: NamespaceName,
    java: JavaPrograms, zk: KazooClient, sidecars: PulsarCluster, tmp_path: Path,
) -> None:  # fmt: skip
    cluster, ns = pulsar_cluster, cluster_namespace
    work = workload.work(cluster, ns, java, tmp_path / "client.log")
    sidecar = cluster.sidecars[0]
    _start(sidecar, ns, session_seconds=30)
    workload.holding(sidecar, work.leaks, zk)
    leader = cluster.zookeeper_leader()
    fault_at = time.time()
    leader.kill()
    try:
        # Read as soon as a new leader serves: the sidecar deletes nothing until SETTLE after.
        done_before = work.leaks - rig.bookkeeper_ledgers(zk)
        cluster_rig.settled(cluster, cluster_admin, [work], zk, tmp_path / "client.log")
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
    work = workload.work(cluster, ns, java, tmp_path / "client.log")
    sidecar = cluster.sidecars[1]
    session = 6  # seconds: ZooKeeper's minimum is 2 ticks (4 s)
    _start(sidecar, ns, session_seconds=session)
    workload.holding(sidecar, work.leaks, zk)
    sidecar.pause()
    done_before = work.leaks - rig.bookkeeper_ledgers(zk)
    time.sleep(3 * session)  # well past its session: ZooKeeper expires it meanwhile
    fault_at = time.time()
    sidecar.resume()
    cluster_rig.settled(cluster, cluster_admin, [work], zk, tmp_path / "client.log")
    logged = sidecar.events()
    assert any(e["event"] == "zookeeper session expired" and e["at"] >= fault_at for e in logged)
    assert any(
        e["event"] == "zookeeper connected again" and e.get("new_session") for e in logged
    ), sidecar.log_tail()
    figures = _check_after(sidecar, fault_at, done_before)
    assert sidecar.running, sidecar.log_tail()
    print(f"{sidecar.name} paused {3 * session} s:", figures)
