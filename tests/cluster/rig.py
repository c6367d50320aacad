"""What the cluster scenarios judge after a fault (the work itself, and the sidecars started
around it: harness/pulsar_cluster/workload.py): the oracle is the cluster's ZooKeeper read
raw, the brokers' internalStats and stats, the messages read back, and the sidecars' own
logs for who deleted what."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pulsar
from kazoo.client import KazooClient

from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from harness.process import wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster
from harness.pulsar_cluster.sidecar import SidecarProcess
from harness.pulsar_cluster.workload import Work, client
from tests.real_pulsar import rig


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


def consumers_everywhere(admin: ClusterAdmin, topic: TopicName, count: int) -> bool:
    """Every partition of `topic` has `count` consumers on the worker's subscription (the
    broker's own stats: who is on the Shared subscription)."""
    return set(admin.consumers(topic, SUBSCRIPTION).values()) == {count}


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


def audit(cluster: PulsarCluster, *args: str) -> dict[str, Any]:
    """`ledger-janitor audit -c <the first broker's broker.conf> --json` as an operator runs it
    (Spark local[2] on loopback), with `args`: its figures, the last line it prints."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, "-m", "ledger_janitor", "audit", "-c", str(cluster.brokers[0].conf_path),
         "--spark-master", "local[2]", "--json", *args],
        capture_output=True, text=True, timeout=1500, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures
