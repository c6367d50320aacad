"""A real Pulsar cluster on one machine, from the distribution the suite fetches: a ZooKeeper
ensemble, the cluster's metadata initialised once, bookies, brokers, and a sidecar next to
each broker, all on loopback with free ports, each JVM its own data directory and a small
heap.

Start-up goes in steps, what can run at once at once: the ZooKeepers together (ready when
each says it is leader or follower); `bin/pulsar initialize-cluster-metadata` (the cluster,
and BookKeeper's `/ledgers`); then the bookies and brokers together (a broker starts without
bookies; its health check needs them). `timings` records each step, `stop` how long stopping
took. The sidecars are started by the tests that want them (`sidecars[i].start()`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from harness.pulsar_cluster.bookie import Bookie
from harness.pulsar_cluster.broker import Broker
from harness.pulsar_cluster.node import JVM_OPTIONS, JvmNode, NodeFailedError
from harness.pulsar_cluster.sidecar import SidecarProcess
from harness.pulsar_cluster.zookeeper import Member, ZooKeeperNode
from harness.pulsar_dist import Distribution, distribution

CLUSTER_NAME = "lj-cluster"
# Heaps for a 2-core machine shared with other work (DESIGN.md: about 140, 220 and 300 MB
# resident). The bookie's and broker's caches are sized from the direct memory.
ZOOKEEPER_MEMORY = {"PULSAR_MEM": "-Xms64m -Xmx128m"}
BOOKIE_MEMORY = {"BOOKIE_MEM": "-Xms128m -Xmx256m -XX:MaxDirectMemorySize=256m"}
BROKER_MEMORY = {"PULSAR_MEM": "-Xms128m -Xmx384m -XX:MaxDirectMemorySize=256m"}
TOOL_MEMORY = {"PULSAR_MEM": "-Xms64m -Xmx128m"}
T = TypeVar("T")


def in_parallel(nodes: Sequence[T], action: Callable[[T], object]) -> None:
    """`action` on every node at once; the first failure is raised after all are done."""
    if not nodes:
        return
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        for future in [pool.submit(action, node) for node in nodes]:
            future.result()


class PulsarCluster:
    def __init__(
        self,
        root: Path,
        zookeepers: int = 3,
        bookies: int = 3,
        brokers: int = 2,
        broker_settings: Mapping[str, object] | None = None,
        bookie_settings: Mapping[str, object] | None = None,
        dist: Distribution | None = None,
    ) -> None:
        self.root = root.absolute()
        self.dist = dist or distribution()
        members = [Member.on_free_ports(myid) for myid in range(1, zookeepers + 1)]
        self.zookeepers = [
            ZooKeeperNode(m, members, self.root / f"zookeeper-{m.myid}", self.dist,
                          ZOOKEEPER_MEMORY)
            for m in members
        ]  # fmt: skip
        self.bookies = [
            Bookie(i, self.zookeeper_hosts, self.root / f"bookie-{i}", self.dist, BOOKIE_MEMORY,
                   bookie_settings)
            for i in range(bookies)
        ]  # fmt: skip
        self.brokers = [
            Broker(i, CLUSTER_NAME, self.metadata_url, self.root / f"broker-{i}", self.dist,
                   BROKER_MEMORY, broker_settings)
            for i in range(brokers)
        ]  # fmt: skip
        self.sidecars = [
            SidecarProcess(f"sidecar-{i}", broker.conf_path, broker.log_dir / "sidecar.log")
            for i, broker in enumerate(self.brokers)
        ]
        self.timings: dict[str, float] = {}

    # Addresses.
    @property
    def cluster_name(self) -> str:
        return CLUSTER_NAME

    @property
    def zookeeper_hosts(self) -> str:
        return ",".join(zookeeper.hosts for zookeeper in self.zookeepers)

    @property
    def metadata_url(self) -> str:
        return f"zk:{self.zookeeper_hosts}"

    @property
    def service_url(self) -> str:
        """Every broker, as one multi-host URL: a client reaches whichever is up, and its
        lookups take it to each topic's owner."""
        return "pulsar://" + ",".join(b.service_url.removeprefix("pulsar://") for b in self.brokers)

    @property
    def web_url(self) -> str:
        """The first broker's admin URL (any broker answers for the whole cluster)."""
        return self.brokers[0].web_url

    @property
    def nodes(self) -> list[JvmNode]:
        return [*self.zookeepers, *self.bookies, *self.brokers]

    # Life cycle.
    def start(self, timeout: float = 300.0) -> PulsarCluster:
        """Every node, step by step (a cold start again on the data left by `stop`)."""
        began = time.monotonic()
        try:
            self._step("zookeeper ensemble", self.zookeepers, timeout)
            if not (self.root / "initialized").exists():
                started = time.monotonic()
                self.initialize_metadata(timeout)
                self.timings["cluster metadata"] = time.monotonic() - started
            self._step("bookies and brokers", [*self.bookies, *self.brokers], timeout)
        except BaseException:
            self.stop()
            raise
        self.timings["start"] = time.monotonic() - began
        return self

    def _step(self, label: str, nodes: Sequence[JvmNode], timeout: float) -> None:
        started = time.monotonic()
        for node in nodes:
            node.launch()
        in_parallel(nodes, lambda node: self._record(node, timeout))
        self.timings[label] = time.monotonic() - started

    def _record(self, node: JvmNode, timeout: float) -> None:
        self.timings[node.name] = node.wait_ready(timeout)

    def initialize_metadata(self, timeout: float) -> None:
        """`bin/pulsar initialize-cluster-metadata`, once: the cluster, its tenants and
        namespaces, and BookKeeper's ledger layout under `/ledgers`."""
        webs = ",".join(b.web_url.removeprefix("http://") for b in self.brokers)
        log = self.root / "initialize-cluster-metadata.log"
        env = {**os.environ, **JVM_OPTIONS, **TOOL_MEMORY, "PULSAR_LOG_DIR": str(self.root)}
        with log.open("ab") as out:
            done = subprocess.run(
                [str(self.dist.home / "bin" / "pulsar"), "initialize-cluster-metadata",
                 "--cluster", CLUSTER_NAME,
                 "--metadata-store", self.metadata_url,
                 "--configuration-metadata-store", self.metadata_url,
                 "--web-service-url", f"http://{webs}",
                 "--broker-service-url", self.service_url],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                timeout=timeout, check=False,
            )  # fmt: skip
        if done.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            raise NodeFailedError(f"initialize-cluster-metadata exited {done.returncode}:\n{tail}")
        (self.root / "initialized").touch()

    def stop(self) -> float:
        """Sidecars, then brokers, bookies, ZooKeepers, each kind at once; SIGTERM, SIGKILL
        after a bound (`forced` lists who needed it). The seconds it took."""
        started = time.monotonic()
        in_parallel(self.sidecars, lambda sidecar: sidecar.stop())
        for kind in (self.brokers, self.bookies, self.zookeepers):
            in_parallel(kind, lambda node: node.stop())
        self.timings["stop"] = time.monotonic() - started
        return self.timings["stop"]

    @property
    def forced(self) -> list[str]:
        """The nodes whose last stop needed SIGKILL: they did not end on SIGTERM in time."""
        return [node.name for node in self.nodes if node.forced]

    # What tests ask.
    def rss(self) -> dict[str, int]:
        """Resident bytes of each running JVM."""
        found = {}
        for node in self.nodes:
            with contextlib.suppress(RuntimeError, FileNotFoundError):
                found[node.name] = node.rss_bytes()
        return found

    def zookeeper_leader(self) -> ZooKeeperNode:
        for zookeeper in self.zookeepers:
            if zookeeper.running and zookeeper.mode() == "leader":
                return zookeeper
        raise LookupError("no ZooKeeper says it is the leader")

    def bookies_holding(self, ledger_id: int) -> list[Bookie]:
        """The bookies a ledger was written to, by its metadata (asked of a running bookie);
        empty when its metadata is gone."""
        asked = next(bookie for bookie in self.bookies if bookie.running)
        ensemble = asked.ensemble_of(ledger_id) or set()
        return [bookie for bookie in self.bookies if bookie.bookie_id in ensemble]

    def broker_at(self, url: str) -> Broker:
        """The broker a lookup named, by its pulsar:// or http:// URL, or its broker id."""
        for broker in self.brokers:
            if url.rstrip("/") in (broker.service_url, broker.web_url, broker.broker_id):
                return broker
        raise LookupError(f"no broker of this cluster at {url}")

    def logs(self, nodes: Iterable[JvmNode] | None = None, lines: int = 30) -> str:
        """The tail of each node's log and each sidecar's, for a failure report."""
        parts = [node.log_tail(lines) for node in (self.nodes if nodes is None else nodes)]
        parts += [sidecar.log_tail(lines) for sidecar in self.sidecars]
        return "\n".join(parts)

    def report(self) -> str:
        """Timings and resident memory, one line each."""
        lines = [f"{label}: {seconds:.1f} s" for label, seconds in self.timings.items()]
        lines += [f"{name}: RSS {size / 2**20:.0f} MiB" for name, size in self.rss().items()]
        return "\n".join(lines)
