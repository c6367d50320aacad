"""What the cluster scenarios share: the work (a live topic, leaks of it planted with
BookKeeper's own client and enqueued), the sidecars' own logs read as events, and the oracle
(the cluster's ZooKeeper read raw, the brokers' internalStats, the messages read back)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulsar
from kazoo.client import KazooClient

from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.process import wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster
from harness.pulsar_cluster.leaks import enqueue_leaks, plant
from harness.pulsar_cluster.sidecar import SidecarProcess
from tests.cluster.conftest import client
from tests.real_pulsar import rig

LEAKS = 30
SETTLE = 12.0  # metadataStoreSessionTimeoutMillis, in seconds: the sidecar's start within it
AGE_RULE = 3  # minLedgerAgeSecondsOfTwoPhaseDeletion: the planted leaks are older by then


def start_sidecar(
    sidecar: SidecarProcess, namespaces: Iterable[NamespaceName], session_seconds: int = 30
) -> None:
    """One worker thread and small batches, so that the work spans a fault; the age rule and
    the settling on, so that a fresh sidecar holds its work for SETTLE; `operationTimeoutSeconds`
    is also the ZooKeeper session's time-out."""
    sidecar.start(
        deletionNamespaces=",".join(map(str, namespaces)),
        minLedgerAgeSecondsOfTwoPhaseDeletion=AGE_RULE,
        metadataStoreSessionTimeoutMillis=int(SETTLE * 1000),
        ledgerDeletionWorkerThreadsOfTwoPhaseDeletion=1,
        ledgerDeletionBatchSizeOfTwoPhaseDeletion=2,
        operationTimeoutSeconds=session_seconds,
    )


def backlog(admin: ClusterAdmin, ns: NamespaceName) -> int:
    """Pending deletions not yet acknowledged: the worker's subscription's backlog on the
    namespace's deletion topic and on its retry topic."""
    total = 0
    for name in (ns.deletion_topic, ns.retry_topic):
        topic = TopicName.parse(name)
        stats = admin.get(f"{admin.topic_path(topic)}/partitioned-stats", 404) or {}
        if not stats.get("metadata", {}).get("partitions"):
            stats = admin.get(f"{admin.topic_path(topic)}/stats", 404) or {}
        total += int(stats.get("subscriptions", {}).get(SUBSCRIPTION, {}).get("msgBacklog", 0))
    return total


@dataclass
class Work:
    """A live topic with its messages, and leaks of it planted with BookKeeper's own client
    and enqueued."""

    topic: TopicName
    sent: list[Any]
    leaks: set[int]


def work(
    cluster: PulsarCluster,
    ns: NamespaceName,
    java: JavaPrograms,
    log: Path,
    name: str = "live",
    leaks: int = LEAKS,
    size: int = 4096,
    enqueue: bool = True,
) -> Work:
    """A live topic `name` of `ns` with 30 messages, and `leaks` of it planted and (unless
    told not to) enqueued."""
    topic = TopicName(ns, name)
    producer_client = client(cluster, log)
    try:
        sent = rig.produce(producer_client, topic, 30)
    finally:
        producer_client.close()
    planted = plant(cluster, java, topic, leaks, size)
    if enqueue:
        enqueue_leaks(cluster, topic, planted)
    return Work(topic, sent, planted)


def holding(
    sidecars: SidecarProcess | Iterable[SidecarProcess], leaks: set[int], zk: KazooClient
) -> None:
    """Until a sidecar holds the work: it received pending deletions (since it was last
    started: its log holds earlier runs' lines too) and handed them back until its connection
    has settled. A deleting sidecar cannot be caught mid-batch (it deletes 30 in under 0.1 s),
    so a fault strikes here, between its reads and its decisions, with every leak still to
    delete."""
    chosen = [sidecars] if isinstance(sidecars, SidecarProcess) else list(sidecars)

    def reconsumed(sidecar: SidecarProcess) -> bool:
        since = sidecar.started_at
        return any(e["event"] == "reconsumed" and e["at"] >= since for e in sidecar.events())

    def held_or_deleted() -> bool:
        return any(map(reconsumed, chosen)) or not leaks <= rig.bookkeeper_ledgers(zk)

    names = ", ".join(sidecar.name for sidecar in chosen)
    wait_until(held_or_deleted, 240, f"{names} holding the pending deletions", poll=0.1)
    assert leaks <= rig.bookkeeper_ledgers(zk), "deleted before its connection settled"


def figures(sidecars: Iterable[SidecarProcess], fault_at: float, leaks: set[int]) -> dict[str, Any]:
    """How long after the fault the first of `leaks` was deleted, and what the fault cost:
    reconsumes and archives after it (every sidecar)."""
    found = [e for sidecar in sidecars for e in sidecar.events()]
    deleted = [e["at"] for e in found if e["event"] == "deleted" and e.get("ledger_id") in leaks]
    after = [at for at in deleted if at > fault_at]
    return {
        "work continued after (s)": round(min(after) - fault_at, 1) if after else None,
        "reconsumed": sum(e["event"] == "reconsumed" and e["at"] > fault_at for e in found),
        "archived": sum(e["event"] == "archived" for e in found),
    }


def deleted_once(sidecars: Iterable[SidecarProcess], leaks: set[int]) -> dict[str, int]:
    """Per sidecar, how many of `leaks` it deleted; none was deleted by two (the second one
    finds it already gone and says so)."""
    by: dict[int, list[str]] = {}
    for sidecar in sidecars:
        for entry in sidecar.events():
            if entry["event"] == "deleted" and entry.get("ledger_id") in leaks:
                by.setdefault(entry["ledger_id"], []).append(sidecar.name)
    twice = {ledger: names for ledger, names in by.items() if len(names) > 1}
    assert not twice, f"deleted twice: {twice}"
    counts: dict[str, int] = {}
    for (name,) in by.values():
        counts[name] = counts.get(name, 0) + 1
    return counts


def settled(
    cluster: PulsarCluster,
    admin: ClusterAdmin,
    works: Iterable[Work],
    zk: KazooClient,
    log: Path,
    timeout: float = 240,
) -> None:
    """Every leak gone; nothing the sidecars deleted on the works' topics but their leaks;
    every ledger the brokers reference now still there; every message still served."""
    works = list(works)
    leaks = set().union(*(w.leaks for w in works))
    wait_until(
        lambda: not leaks & rig.bookkeeper_ledgers(zk), timeout,
        "every planted leak deleted", poll=1,
    )  # fmt: skip
    # What the brokers reference now, read before what exists: a topic moved or reloaded
    # meanwhile makes a ledger, which then exists too.
    now = {one.topic: rig.ledgers_of(admin, one.topic) for one in works}
    alive = rig.bookkeeper_ledgers(zk)
    # The brokers delete ledgers too (a cursor's old ledger once a topic moved): of what they
    # referenced before, nothing the sidecars deleted.
    ours = {str(one.topic): one for one in works}
    for sidecar in cluster.sidecars:
        for entry in sidecar.events():
            one = ours.get(entry.get("topic", ""))
            if entry["event"] == "deleted" and one is not None:
                assert entry["ledger_id"] in one.leaks, f"{sidecar.name} deleted {entry}"
    for one in works:
        assert now[one.topic] <= alive, sorted(now[one.topic] - alive)
    reader = client(cluster, log)
    try:
        for one in works:
            consumer = reader.subscribe(
                one.topic.full_name, "keep", consumer_type=pulsar.ConsumerType.Shared
            )
            back = [m.data() for m in rig.receive_all(consumer, len(one.sent), timeout=120)]
            consumer.close()
            assert sorted(back) == sorted(one.sent)
    finally:
        reader.close()
