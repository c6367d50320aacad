"""The work a fault strikes in, shared by the cluster's scenario tests and its fault bench: a
live topic with messages, leaks of it planted with BookKeeper's own client and enqueued, the
sidecars started so that the work spans a fault, the moment a sidecar holds the work, and
what a fault cost (read from the sidecars' own logs).

What is judged after a fault (every leak gone, nothing referenced deleted, every message
read back) is the tests' own (tests/cluster/rig.py), not here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulsar
from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from harness.java import JavaPrograms
from harness.process import wait_until
from harness.pulsar_cluster.cluster import PulsarCluster
from harness.pulsar_cluster.leaks import enqueue_leaks, plant
from harness.pulsar_cluster.sidecar import SidecarProcess

LEAKS = 30
SETTLE = 12.0  # metadataStoreSessionTimeoutMillis, in seconds: the sidecar's start within it
AGE_RULE = 3  # minLedgerAgeSecondsOfTwoPhaseDeletion: the planted leaks are older by then


def client(cluster: PulsarCluster, log: Path, url: str | None = None) -> pulsar.Client:
    """A Pulsar client of `url` (every broker by default) logging to `log`, not stdout."""
    logger = pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log))
    return pulsar.Client(url or cluster.service_url, logger=logger, operation_timeout_seconds=60)


def alive(zk: KazooClient, ledgers: Iterable[int]) -> set[int]:
    """Which of `ledgers` still have their metadata in the cluster's ZooKeeper, read raw; a
    read that meets a lost connection (a leader election) is retried (kazoo's own retry)."""
    return {ledger for ledger in ledgers if zk.retry(zk.exists, bk.ledger_path(ledger))}


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


@dataclass
class Work:
    """A live topic with its messages, and leaks of it planted with BookKeeper's own client
    and enqueued."""

    topic: TopicName
    sent: list[bytes]
    leaks: set[int]


def produce(cluster: PulsarCluster, topic: TopicName, count: int, log: Path) -> list[bytes]:
    """`count` messages, one entry each; a durable subscription `keep` made first, so that
    the broker neither trims them nor deletes the topic as inactive."""
    made = client(cluster, log)
    try:
        made.subscribe(
            topic.full_name, "keep", initial_position=pulsar.InitialPosition.Earliest
        ).close()
        producer = made.create_producer(topic.full_name, batching_enabled=False)
        sent = [f"m-{index}".encode() for index in range(count)]
        for payload in sent:
            producer.send(payload)
        producer.close()
    finally:
        made.close()
    return sent


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
    sent = produce(cluster, topic, 30, log)
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
        return any(map(reconsumed, chosen)) or alive(zk, leaks) != leaks

    names = ", ".join(sidecar.name for sidecar in chosen)
    wait_until(held_or_deleted, 240, f"{names} holding the pending deletions", poll=0.1)
    if alive(zk, leaks) != leaks:
        raise AssertionError("deleted before its connection settled")


def figures(sidecars: Iterable[SidecarProcess], fault_at: float, leaks: set[int]) -> dict[str, Any]:
    """How long after the fault the first of `leaks` was deleted, and what the fault cost:
    reconsumes and archives after it (every sidecar)."""
    found = [e for sidecar in sidecars for e in sidecar.events()]
    deleted = [e["at"] for e in found if e["event"] == "deleted" and e.get("ledger_id") in leaks]
    after = [at for at in deleted if at > fault_at]
    return {
        "work continued after (s)": round(min(after) - fault_at, 1) if after else None,
        "reconsumed": sum(e["event"] == "reconsumed" and e["at"] > fault_at for e in found),
        "archived": sum(e["event"] == "archived" and e["at"] > fault_at for e in found),
    }
