"""What each fault of the cluster costs the deletions: how long after it struck the work
continued (the first planted leak deleted), how long until every leak was gone, and how
many reconsumes and archives it caused (the sidecars' own log lines).

Each fault strikes the way the scenario tests strike it (tests/cluster/): a namespace of its
own, a live topic and 30 leaks planted with BookKeeper's own client and enqueued, the
sidecars started with the settling and the age rule on (harness/pulsar_cluster/workload.py),
and the fault struck once a sidecar holds the work. The first row strikes nothing: its
figures are what the settling costs by itself, the comparison for every other row."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from rich.console import Console

from bench._common import render
from bench.cluster.throughput import namespace
from deletion.domain.topics import NamespaceName
from harness.java import JavaPrograms
from harness.process import wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster, SidecarProcess
from harness.pulsar_cluster.workload import Work, alive, figures, holding, start_sidecar, work

PAUSED_SESSION = 6  # seconds: a paused sidecar's ZooKeeper session, ZooKeeper's minimum 4


@dataclass
class Strike:
    """One fault in the making: the cluster, the work, and the sidecars holding it."""

    cluster: PulsarCluster
    admin: ClusterAdmin
    zk: KazooClient
    ns: NamespaceName
    work: Work
    holders: list[SidecarProcess]
    fault_at: float = 0.0
    gone_after: float | None = None  # seconds from the fault to every leak gone


Fault = Callable[[Strike], dict[str, Any]]  # strikes; returns its own figures


def _nothing(strike: Strike) -> dict[str, Any]:
    return {}


def _bundles_moved_and_split(strike: Strike) -> dict[str, Any]:
    cluster, admin, ns = strike.cluster, strike.admin, strike.ns
    ids = {broker.broker_id for broker in cluster.brokers}
    owners = admin.bundle_owners(cluster.cluster_name, ns)
    for bundle, owner in owners.items():
        admin.unload(ns, bundle, destination=(ids - {owner}).pop())
    split = admin.deletion_bundle(ns)

    def done() -> bool:  # refused while the bundle is still moving: asked again
        if split not in admin.bundles(ns):
            return True
        with contextlib.suppress(Exception):
            admin.split(ns, split, unload=True)
        return split not in admin.bundles(ns)

    wait_until(done, 120, "the deletion topic's bundle split", poll=2)
    return {"note": f"{len(owners)} bundles moved, the deletion topic's split"}


def _rolling_restart(strike: Strike) -> dict[str, Any]:
    took = []
    for sidecar, broker in zip(strike.cluster.sidecars, strike.cluster.brokers, strict=True):
        started = time.monotonic()
        sidecar.stop()
        broker.stop()
        broker.start()
        start_sidecar(sidecar, [strike.ns])
        took.append(f"{time.monotonic() - started:.1f}")
    return {"note": f"s a pod: {', '.join(took)}"}


def _broker_killed(strike: Strike) -> dict[str, Any]:
    """The second pod's broker (its sidecar alone holds the work); the first pod's sidecar
    started once it is gone, as a takeover."""
    victim = strike.cluster.brokers[1]
    victim.kill()
    start_sidecar(strike.cluster.sidecars[0], [strike.ns])
    back = victim.start()
    return {"note": f"{victim.name} back after {back:.1f} s"}


def _bookie_killed(strike: Strike) -> dict[str, Any]:
    cluster = strike.cluster
    held = {ledger: cluster.bookies_holding(ledger) for ledger in strike.work.leaks}
    bookie = max(cluster.bookies, key=lambda b: sum(b in on for on in held.values()))
    bookie.kill()
    _until_gone(strike)
    back = bookie.start()
    on_it = sum(bookie in on for on in held.values())
    return {"note": f"{bookie.name} held {on_it}; back after {back:.1f} s"}


def _zookeeper_leader_killed(strike: Strike) -> dict[str, Any]:
    leader = strike.cluster.zookeeper_leader()
    leader.kill()
    _until_gone(strike)
    back = leader.start()
    return {"note": f"{leader.name} back after {back:.1f} s"}


def _sidecar_paused(strike: Strike) -> dict[str, Any]:
    (sidecar,) = strike.holders
    sidecar.pause()
    time.sleep(3 * PAUSED_SESSION)
    sidecar.resume()
    return {"note": f"paused {3 * PAUSED_SESSION} s, its session {PAUSED_SESSION} s"}


# name, the sidecars holding the work (by pod), their ZooKeeper session, the fault
FAULTS: list[tuple[str, tuple[int, ...], int, Fault]] = [
    ("none (the settling alone)", (0, 1), 30, _nothing),
    ("bundles moved and split", (0, 1), 30, _bundles_moved_and_split),
    ("rolling restart", (0, 1), 30, _rolling_restart),
    ("broker SIGKILLed", (1,), 30, _broker_killed),
    ("bookie SIGKILLed", (0,), 30, _bookie_killed),
    ("ZooKeeper leader SIGKILLed", (0,), 30, _zookeeper_leader_killed),
    ("sidecar paused past its session", (1,), PAUSED_SESSION, _sidecar_paused),
]


def _until_gone(strike: Strike) -> None:
    """Until every leak is gone (the first time: a fault that restarts its victim after)."""
    if strike.gone_after is None:
        leaks, zk = strike.work.leaks, strike.zk
        wait_until(lambda: not alive(zk, leaks), 600, "every leak deleted", poll=0.5)
        strike.gone_after = time.time() - strike.fault_at


def _one(
    cluster: PulsarCluster, admin: ClusterAdmin, java: JavaPrograms, zk: KazooClient,
    log: Path, fault: tuple[str, tuple[int, ...], int, Fault],
) -> dict[str, Any]:  # fmt: skip
    name, pods, session, strike_it = fault
    ns = namespace(admin, "faulted")
    made = work(cluster, ns, java, log)
    holders = [cluster.sidecars[pod] for pod in pods]
    for sidecar in holders:
        start_sidecar(sidecar, [ns], session)
    try:
        holding(holders, made.leaks, zk)
        strike = Strike(cluster, admin, zk, ns, made, holders, fault_at=time.time())
        own = strike_it(strike)
        _until_gone(strike)
    finally:
        for sidecar in cluster.sidecars:
            sidecar.stop()
    return {
        "fault": name,
        **figures(cluster.sidecars, strike.fault_at, made.leaks),
        "all deleted after (s)": round(strike.gone_after or 0.0, 1),
        **own,
    }


def measure(
    cluster: PulsarCluster, admin: ClusterAdmin, java: JavaPrograms, zk: KazooClient, log: Path
) -> list[dict[str, Any]]:
    return [_one(cluster, admin, java, zk, log, fault) for fault in FAULTS]


def render_result(rows: list[dict[str, Any]], console: Console) -> None:
    columns = ["fault", "work continued after (s)", "all deleted after (s)", "reconsumed",
               "archived", "note"]  # fmt: skip
    table = [[row.get(column, "") for column in columns] for row in rows]
    render("what each fault costs (30 leaks; from the fault)", columns, table, console)
