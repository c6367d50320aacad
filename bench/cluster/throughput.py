"""Deletions through the cluster and the audit's leaks freed on the bookies' disks:

1. deletions a second with 1 sidecar and with 2: N leaks (made with BookKeeper's own client,
   recorded nowhere) enqueued in a namespace of their own, then the sidecars started; the rate
   is N over the time from the first deletion to the last (the sidecars' own log lines), and
   the wall time from their start to every ledger gone (ZooKeeper read raw);
2. the floor: N more leaks deleted by a bare loop on the same ZooKeeper, 128 at a time (the
   sidecar's default batch): their znodes read (pipelined), then one kazoo multi request
   checking each version read and deleting it, what any safe delete of a batch's ledger
   metadata costs; no Pulsar, no decision, no acknowledgement;
3. (measured first, while nothing else was deleted) `audit --enqueue` to bytes freed: K
   leaks of 1.5 MB each, `ledger-janitor audit --enqueue` with one sidecar running, then
   the bookies' garbage collection asked for until their entry logs (on their own disks)
   are smaller by at least half of what the leaks held."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from rich.console import Console

from bench._common import render
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from harness.java import JavaPrograms
from harness.process import wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster, SidecarProcess
from harness.pulsar_cluster.leaks import enqueue_leaks, plant
from harness.pulsar_cluster.workload import alive

BIG = 1_500_000  # bytes a leak of the audit's measure
BATCH = 128  # ledgerDeletionBatchSizeOfTwoPhaseDeletion's default


def namespace(admin: ClusterAdmin, name: str) -> NamespaceName:
    namespace = NamespaceName(f"bench-{uuid.uuid4().hex[:8]}", name)
    admin.create_namespace(namespace)
    return namespace


def _deleting(
    cluster: PulsarCluster,
    admin: ClusterAdmin,
    java: JavaPrograms,
    zk: KazooClient,
    count: int,
    sidecars: Sequence[SidecarProcess],
) -> dict[str, Any]:
    ns = namespace(admin, f"sidecars-{len(sidecars)}")
    topic = TopicName(ns, "leaky")
    leaks = plant(cluster, java, topic, count)
    enqueue_leaks(cluster, topic, leaks)
    started = time.monotonic()
    for sidecar in sidecars:
        sidecar.start(deletionNamespaces=str(ns))
    try:
        wait_until(lambda: not alive(zk, leaks), 1800, "every leak deleted", poll=0.5)
        wall = time.monotonic() - started
        deleted = [
            e["at"]
            for sidecar in sidecars
            for e in sidecar.events()
            if e["event"] == "deleted" and e.get("ledger_id") in leaks
        ]
    finally:
        for sidecar in sidecars:
            sidecar.stop()
    span = max(deleted) - min(deleted) if len(deleted) > 1 else 0.0
    return {
        "sidecars": len(sidecars),
        "ledgers": count,
        "deleted_per_s": round(count / span, 1) if span else None,
        "start_to_all_gone_s": round(wall, 2),
    }


def _bare_loop(
    cluster: PulsarCluster, java: JavaPrograms, zk: KazooClient, count: int, batch: int
) -> float:
    """Deletions a second of a bare loop doing what a batch's deletes need of ZooKeeper: the
    batch's ledgers read (pipelined), then one multi request checking each version read and
    deleting it; `batch` ledgers at a time, the sidecar's default batch size."""
    topic = TopicName(NamespaceName("bench", "bare"), "leaky")
    leaks = sorted(plant(cluster, java, topic, count))
    started = time.perf_counter()
    for first in range(0, len(leaks), batch):
        paths = [bk.ledger_path(ledger) for ledger in leaks[first : first + batch]]
        stats = [zk.get_async(path) for path in paths]
        transaction = zk.transaction()
        for path, read in zip(paths, stats, strict=True):
            version = read.get(timeout=30)[1].version
            transaction.check(path, version)
            transaction.delete(path, version)
        results = transaction.commit()
        if any(isinstance(result, Exception) for result in results):
            raise RuntimeError(f"deleting {paths[0]}...: {results}")
    return count / (time.perf_counter() - started)


def _entry_logs(cluster: PulsarCluster) -> int:
    return sum(bookie.entry_log_bytes() for bookie in cluster.bookies)


def _audit_to_freed(
    cluster: PulsarCluster, admin: ClusterAdmin, java: JavaPrograms, zk: KazooClient, big: int
) -> dict[str, Any]:
    ns = namespace(admin, "audited")
    topic = TopicName(ns, "leaky")
    leaks = plant(cluster, java, topic, big, BIG)
    time.sleep(2)  # the bookies' write caches flushed to their entry logs (every 1 s)
    before = _entry_logs(cluster)
    sidecar = cluster.sidecars[0].start(deletionNamespaces=str(ns))
    started = time.monotonic()
    try:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
        done = subprocess.run(
            [sys.executable, "-m", "ledger_janitor", "audit",
             "-c", str(cluster.brokers[0].conf_path), "--spark-master", "local[2]",
             "--min-age", "0s", "--enqueue", "--set", f"deletionNamespaces={ns}",
             "--set", "sendDelaySecondsOfTwoPhaseDeletion=0"],
            capture_output=True, text=True, timeout=1800, env=env, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"audit exited {done.returncode}:\n{done.stderr[-3000:]}")
        audited = time.monotonic() - started
        wait_until(lambda: not alive(zk, leaks), 600, "the audited leaks deleted", poll=0.5)
        deleted = time.monotonic() - started
        wanted = before - big * BIG // 2

        def freed() -> bool:
            for bookie in cluster.bookies:
                bookie.gc()
            return _entry_logs(cluster) <= wanted

        wait_until(freed, 600, "the bookies' entry logs collected", poll=3)
    finally:
        sidecar.stop()
    return {
        "leaks": big,
        "leaked_bytes": big * BIG,
        "audit_s": round(audited, 1),
        "until_deleted_s": round(deleted, 1),
        "until_freed_s": round(time.monotonic() - started, 1),
        "entry_log_bytes_freed": before - _entry_logs(cluster),
    }


def measure(
    cluster: PulsarCluster, admin: ClusterAdmin, java: JavaPrograms, zk: KazooClient,
    count: int, big: int,
) -> dict[str, Any]:  # fmt: skip
    # First, while nothing else was deleted: the bytes freed are the audited leaks'.
    audit = _audit_to_freed(cluster, admin, java, zk, big)
    one = _deleting(cluster, admin, java, zk, count, cluster.sidecars[:1])
    two = _deleting(cluster, admin, java, zk, count, cluster.sidecars[:2])
    bare = _bare_loop(cluster, java, zk, count, BATCH)
    return {"one_sidecar": one, "two_sidecars": two,
            "bare_kazoo_multi_per_s": round(bare, 1), "audit_to_freed": audit}  # fmt: skip


def render_result(result: dict[str, Any], count: int, console: Console) -> None:
    rows = [
        ["1 sidecar", result["one_sidecar"]["deleted_per_s"],
         result["one_sidecar"]["start_to_all_gone_s"]],
        ["2 sidecars", result["two_sidecars"]["deleted_per_s"],
         result["two_sidecars"]["start_to_all_gone_s"]],
        ["bare kazoo multi loop", result["bare_kazoo_multi_per_s"], "-"],
    ]  # fmt: skip
    render(f"{count} ledgers deleted through the cluster",
           ["how", "deletions/s", "start to all gone (s)"], rows, console)  # fmt: skip
    audit = result["audit_to_freed"]
    title = "audit --enqueue to bytes freed on the bookies' disks"
    render(title, list(audit), [list(audit.values())], console)
