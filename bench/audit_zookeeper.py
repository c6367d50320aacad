"""The ZooKeeper part of `python -m bench.audit`: the inventory scan against the server's own
create rate, measured in the same run on the same server.

Ledger znodes in BookKeeper's 2-4-4 layout are created by transactions of 1,000 (the
server's best rate: one request carries a thousand writes), then scanned by Spark (one
connection per partition: `local[2]` gives two) and by the same code in one process with
one connection, Spark after an untimed scan of a tree a tenth the size (`warm_up`); and
read raw, the same znodes by multiRead requests of the same size with nothing around them
(`raw_multiread`): the limit the scan is compared with (goal: at least RAW_GOAL of it). Each
figure has the peak memory of its step beside it (bench/rss.py). When
the bench started the server itself, the server's CPU per read is reported too: on a shared
machine, the server's cost per request bounds what any number of clients can read.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from pyspark.sql import SparkSession
from rich.console import Console
from rich.table import Table

from audit.scan.ledgers import ZooKeeperTarget, expand_buckets, scan_buckets, zookeeper_inventory
from bench.cpu import CpuSpan
from bench.rss import jvm_pid, measured
from config import parse_store_url
from deletion.adapters.opening import StoreSpec
from deletion.adapters.stores.zookeeper import connect_client
from deletion.adapters.stores.zookeeper_multiread import OPS_PER_REQUEST, multi_read_async
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from harness.janitor import make_chroot

TARGET_PER_S = 25_000  # issue 14: the scan with 2 partitions
RAW_GOAL = 0.5  # issue 33: the scan at least this share of the raw multiRead rate


def ledger_znode() -> bytes:
    """A closed Pulsar ledger's metadata, BookKeeper format v3."""
    metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=1024, ackQuorumSize=2)
    metadata.state = LedgerMetadataFormat.CLOSED
    metadata.segment.add(ensembleMember=["bookie-1:3181", "bookie-2:3181"], firstEntryId=0)
    topic = TopicName(NamespaceName("tenant", "ns"), "topic")
    for key, value in pulsar_custom_metadata(topic, LedgerComponent.MANAGED_LEDGER).items():
        metadata.customMetadata.add(key=key, value=value)
    return bk.encode_v3(metadata)


def connect(hosts: str) -> KazooClient:
    """A client on `hosts`, making its chroot first (laid out as a cluster's, as the audit
    requires: harness.janitor.make_chroot) if there is one."""
    url = parse_store_url(f"zk:{hosts}")
    make_chroot(url.hosts, url.chroot)
    return connect_client(url.hosts, url.chroot, timeout=30)


def populate(hosts: str, n: int) -> float:
    """Ledger znodes 0..n-1 in the 2-4-4 layout, by transactions of 1000; returns the
    seconds the creates took (the connection's start and stop are not counted)."""
    client = connect(hosts)
    try:
        data = ledger_znode()
        started = time.perf_counter()
        for parent in sorted({bk.ledger_path(i).rsplit("/", 1)[0] for i in range(n)}):
            client.ensure_path(parent)
        for start in range(0, n, 1000):
            transaction = client.transaction()
            for ledger_id in range(start, min(n, start + 1000)):
                transaction.create(bk.ledger_path(ledger_id), data)
            assert not any(isinstance(r, Exception) for r in transaction.commit())
        return time.perf_counter() - started
    finally:
        client.stop()
        client.close()


def raw_multiread(hosts: str, n: int, in_flight: int = 10) -> float:
    """The same n ledger znodes read with nothing around the requests: their paths known
    beforehand (no listing), multiRead requests of OPS_PER_REQUEST on one connection,
    `in_flight` at a time, the replies not parsed into ledgers. Returns the seconds taken."""
    client = connect(hosts)
    try:
        paths = [bk.ledger_path(i) for i in range(n)]
        waiting: deque[Any] = deque()
        started = time.perf_counter()
        for start in range(0, n, OPS_PER_REQUEST):
            waiting.append(multi_read_async(client, paths[start : start + OPS_PER_REQUEST]))
            if len(waiting) >= in_flight:
                waiting.popleft().get(timeout=60)
        while waiting:
            waiting.popleft().get(timeout=60)
        return time.perf_counter() - started
    finally:
        client.stop()
        client.close()


def _raw_run(hosts: str, n: int) -> tuple[float, dict[str, float]]:
    """`raw_multiread`'s seconds, and the CPU the machine spent meanwhile."""
    span = CpuSpan.start()
    seconds = raw_multiread(hosts, n)
    return seconds, span.figures(n)


@dataclass(frozen=True)
class ServerCpu:
    """CPU seconds a local server process has used (utime + stime of /proc/PID/stat)."""

    pid: int

    def seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def single_process_scan(target: ZooKeeperTarget) -> int:
    """The scan's own code, every bucket in this process with one connection."""
    store = target.open()
    try:
        buckets = expand_buckets(store.children, target.root, 1)
    finally:
        store.close()
    return sum(1 for _ in scan_buckets(target, buckets))


def warm_up(spark: SparkSession, hosts: str, n: int) -> None:
    """A Spark scan of a small tree beside the measured one (chroot `warm-up` below it), not
    timed, as the file bench warms up: the Python workers start and import the scan, and the
    JVM compiles its row conversion (the first scan ran 30% slower than the next ones)."""
    warm = f"{hosts}/warm-up"
    populate(warm, max(1_000, n // 10))
    zookeeper_inventory(spark, ZooKeeperTarget(StoreSpec(parse_store_url(f"zk:{warm}")))).count()


def bench_zookeeper(
    spark: SparkSession, hosts: str, n: int, log: Console, server: ServerCpu | None = None
) -> dict[str, Any]:
    jvm = jvm_pid()
    create_s, _, create_rss = measured(lambda: populate(hosts, n))
    log.print(f"zookeeper: {n:,} ledger znodes created at {n / create_s:,.0f}/s")
    target = ZooKeeperTarget(StoreSpec(parse_store_url(f"zk:{hosts}")))
    warm_up(spark, hosts, n)
    server_before = server.seconds() if server else 0.0
    span = CpuSpan.start()
    spark_count, spark_s, spark_rss = measured(
        lambda: zookeeper_inventory(spark, target).count(), jvm
    )
    spark_cpu = span.figures(n)
    server_spark = server.seconds() - server_before if server else 0.0
    log.print(f"zookeeper: scanned by Spark at {n / spark_s:,.0f}/s")
    single_count, single_s, single_rss = measured(lambda: single_process_scan(target))
    assert spark_count == single_count == n, (spark_count, single_count)
    raw_runs = [_raw_run(hosts, n) for _ in range(2)]
    raw_s, raw_cpu = min(raw_runs, key=lambda run: run[0])  # the limit: its better of two
    log.print(f"zookeeper: read raw by multiRead at {n / raw_s:,.0f}/s")
    spark_per_s = round(n / spark_s)
    return {
        "znodes": n,
        "create_per_s": round(n / create_s),
        "create_peak_rss_mb": create_rss.as_dict(),
        "spark_partitions": spark.sparkContext.defaultParallelism,
        "spark_per_s": spark_per_s,
        "spark_peak_rss_mb": spark_rss.as_dict(),
        "single_client_per_s": round(n / single_s),
        "single_client_peak_rss_mb": single_rss.as_dict(),
        "server_cpu_us_per_read": round(server_spark / n * 1e6, 1) if server else None,
        "raw_multiread_per_s": round(n / raw_s),
        "ratio_to_raw": raw_s / spark_s,
        # What bounds the scan on this machine: its whole CPU per znode (the server's, the
        # Python workers', the JVM's), were every core busy.
        "machine_cores": spark_cpu["machine_cores"],
        "spark_machine_cpu_us_per_read": round(spark_cpu["machine_cpu_us_per_message"], 1),
        "spark_machine_busy_cores": round(spark_cpu["machine_busy_cores"], 2),
        "raw_machine_cpu_us_per_read": round(raw_cpu["machine_cpu_us_per_message"], 1),
        "spark_all_cores_bound_per_s": round(
            spark_cpu["machine_cores"] / spark_cpu["machine_cpu_us_per_message"] * 1e6
        ),
        "raw_goal": RAW_GOAL,
        "raw_goal_met": raw_s / spark_s >= RAW_GOAL,
        "target_per_s": TARGET_PER_S,
        "target_met": spark_per_s >= TARGET_PER_S,
        "spark_wins": spark_s < single_s,
    }


def zookeeper_verdicts(zk: dict[str, Any], compare: Any) -> list[str]:
    met = "met" if zk["target_met"] else "MISSED"
    server = zk["server_cpu_us_per_read"]
    cost = f"; the server spent {server:.0f} µs of CPU per read" if server is not None else ""
    ratio = zk["ratio_to_raw"]
    raw = "met" if zk["raw_goal_met"] else f"MISSED by {zk['raw_goal'] - ratio:.2f}"
    bound = zk["spark_all_cores_bound_per_s"]
    share = f", the server {server:.0f} µs of it" if server is not None else ""
    return [
        f"ZooKeeper scan at {ratio:.2f} of the raw multiRead rate of the same znodes "
        f"({zk['raw_multiread_per_s']:,}/s, one connection): goal ≥ {zk['raw_goal']}: {raw}",
        f"What bounds it here: the scan cost the machine {zk['spark_machine_cpu_us_per_read']:.1f}"
        f" µs of CPU a znode ({zk['spark_machine_busy_cores']:.2f} of its "
        f"{zk['machine_cores']:.0f} cores busy{share}), the raw "
        f"reads {zk['raw_machine_cpu_us_per_read']:.1f} µs; with every core busy at that "
        f"cost the scan would reach at most {bound:,}/s, "
        f"{bound / zk['raw_multiread_per_s']:.2f} of the raw rate",
        f"ZooKeeper scan of {zk['znodes']:,} znodes: "
        + compare(1 / zk["spark_per_s"], 1 / zk["single_client_per_s"], "one client")
        + f" ({zk['spark_per_s']:,}/s with {zk['spark_partitions']} partitions vs "
        f"{zk['single_client_per_s']:,}/s)",
        f"ZooKeeper scan target ≥ {zk['target_per_s']:,}/s with 2 partitions: {met} at "
        f"{zk['spark_per_s']:,}/s, the server creating {zk['create_per_s']:,}/s by "
        f"transactions of 1,000{cost}",
    ]


def _rss(peaks: dict[str, float | None]) -> str:
    names = {"driver_mb": "driver", "jvm_mb": "JVM", "python_workers_mb": "worker"}
    shown = [f"{names[k]} {v:,.0f}" for k, v in peaks.items() if v is not None]
    return " / ".join(shown) + " MiB"


def render_zookeeper(zk: dict[str, Any], console: Console) -> None:
    table = Table("zookeeper", "create", "spark scan", "one-client scan", "raw multiRead")
    table.add_row(f"{zk['znodes']:,} ledger znodes", f"{zk['create_per_s']:,}/s",
                  f"{zk['spark_per_s']:,}/s ({zk['spark_partitions']} partitions)",
                  f"{zk['single_client_per_s']:,}/s",
                  f"{zk['raw_multiread_per_s']:,}/s")  # fmt: skip
    table.add_row("peak RSS", _rss(zk["create_peak_rss_mb"]), _rss(zk["spark_peak_rss_mb"]),
                  _rss(zk["single_client_peak_rss_mb"]), "")  # fmt: skip
    console.print(table)
