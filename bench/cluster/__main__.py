"""Deletions through a real Pulsar cluster (harness/pulsar_cluster: 3 ZooKeepers, 3 bookies,
2 brokers, a `ledger-janitor run -c <broker.conf>` next to each broker), measured in one run
on one cluster:

- throughput (bench/cluster/throughput.py): deletions a second with 1 sidecar and with 2,
  against a bare loop of kazoo multi requests deleting as many on the same ZooKeeper; and
  the time from `audit --enqueue` to the leaked bytes freed on the bookies' own disks;
- faults (bench/cluster/faults.py): for each fault of the scenario tests (bundles moved and
  split, a rolling restart, a broker, a bookie and the ZooKeeper leader killed, a sidecar
  paused past its session), how long until the work continued and every leak was gone, and
  the reconsumes and archives it caused; beside the same work with no fault.

    python -m bench.cluster [--json] [--only throughput|faults] [--leaks N] [--big K]
                            [--workdir DIR]   (--quick: N=100, K=4)

About 10 minutes on this 2-core machine, idle; the cluster's JVMs take ~3 GB.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench._common import console_for, finish, parser
from bench.cluster import faults, throughput
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster
from harness.pulsar_cluster.leaks import java_programs
from harness.zookeeper import kazoo_session


def measure(workdir: Path, only: str | None, count: int, big: int) -> dict[str, Any]:
    cluster = PulsarCluster(workdir / "cluster").start(timeout=600)
    admin = ClusterAdmin(cluster.web_url)
    result: dict[str, Any] = {}
    try:
        java = java_programs(workdir / "java")
        with kazoo_session(cluster.zookeeper_hosts) as zk:
            if only in (None, "throughput"):
                result["throughput"] = throughput.measure(cluster, admin, java, zk, count, big)
            if only in (None, "faults"):
                log = workdir / "client.log"
                result["faults"] = faults.measure(cluster, admin, java, zk, log)
    finally:
        admin.close()
        for sidecar in cluster.sidecars:
            sidecar.stop()
        cluster.stop()
    return result


def main() -> None:
    arguments = parser("cluster", __doc__)
    arguments.add_argument("--only", choices=["throughput", "faults"], help="one part only")
    arguments.add_argument("--leaks", type=int, default=1000, help="leaks a measure (1000)")
    arguments.add_argument("--big", type=int, default=12, help="1.5 MB leaks audited (12)")
    args = arguments.parse_args()
    count, big = (100, 4) if args.quick else (args.leaks, args.big)
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as scratch:
        result = measure(args.workdir or Path(scratch), args.only, count, big)
    console = console_for(args.json)
    if "throughput" in result:
        throughput.render_result(result["throughput"], count, console)
    if "faults" in result:
        faults.render_result(result["faults"], console)
    finish(result, args.json)


if __name__ == "__main__":
    main()
