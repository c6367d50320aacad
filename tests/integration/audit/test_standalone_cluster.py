"""The audit submitted with `spark-submit` to a Spark standalone cluster (a master and two
workers from PySpark's own distribution), scanning a real ZooKeeper from the executors.

The project reaches the executors as a user's cluster gets it: a zip of its packages passed
with `--py-files` (the workers' environment has no PYTHONPATH). Ground truth is the set of
ledger ids planted as orphans, compared with the report's, read without Spark.
"""

from __future__ import annotations

import itertools
import json
import re
import time
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import duckdb
import pytest

from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import chrooted
from harness.spark_cluster import PROJECT_PACKAGES, REPO, SparkCluster, build_project_zip
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.seeding import TopicSeeder
from tests.integration.audit.planting import BOOKKEEPER_OWN, ZkLedgers

HOUR_MS = 3_600_000
BUCKETS = 16  # /ledgers/00/0000 .. /ledgers/00/0015: enough for one scan task per core and more
MISSING = 10**9  # referenced, never created
ML, CURSOR, SCHEMA = (
    LedgerComponent.MANAGED_LEDGER,
    LedgerComponent.MANAGED_CURSOR,
    LedgerComponent.SCHEMA_STORAGE,
)


class SpreadLedgers:
    """Ledger ids dealt round-robin over BookKeeper's 2-4-4 buckets (id 10_000*b + n lives
    in /ledgers/00/000b), so that the scan has partitions for every executor."""

    def __init__(self, store: ZooKeeperMetadataStore) -> None:
        self._ledgers = ZkLedgers(store)
        self._ids = (bucket * 10_000 + n for n in itertools.count(1) for bucket in range(BUCKETS))

    def create(self, custom: Mapping[str, bytes], ctime_ms: int | None = None) -> int:
        return self._ledgers.create(custom, ctime_ms=ctime_ms, ledger_id=next(self._ids))

    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int:
        return self.create(custom_metadata)


@pytest.fixture
def store(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[ZooKeeperMetadataStore]:
    opened = chrooted(zookeeper.hosts, chroot)
    yield opened
    opened.close()


def plant(store: ZooKeeperMetadataStore, now_ms: int) -> tuple[set[int], dict[str, int]]:
    """A few hundred ledgers: referenced ones, and orphans of every kind the protocol deletes.
    Returns the orphans' ids and the other figures the audit must report."""
    for node in BOOKKEEPER_OWN:
        store.create(node, b"")
    ledgers = SpreadLedgers(store)
    seeder = TopicSeeder(store, ledgers)
    acme, beta = NamespaceName("acme", "orders"), NamespaceName("beta", "billing")
    topics = [TopicName(ns, f"t-{i}-partition-{p}") for ns in (acme, beta) for i in range(3)
              for p in range(2)]  # fmt: skip
    # Schemas belong to the partitioned topic: seeded once, with partition 0.
    seeded = [seeder.seed(t, 18, schema_versions=2 * (i % 2 == 0)) for i, t in enumerate(topics)]
    orphans: set[int] = set()
    for i, topic in enumerate(seeded):
        trimmed = topic.ledgers[:3]  # trimmed, the deletions never enqueued
        seeder.release(topic, trimmed)
        orphans.update(trimmed)
        if i % 2 == 0:
            orphans.add(seeder.rotate_cursor(topic))
        orphans.update(ledgers.create(pulsar_custom_metadata(topic.topic, ML)) for _ in range(2))
    orphans.add(ledgers.create(pulsar_custom_metadata(topics[1], SCHEMA)))
    gone = TopicName(beta, "deleted-long-ago")
    orphans.update(ledgers.create(pulsar_custom_metadata(gone, kind)) for kind in (ML, CURSOR))
    foreign = [ledgers.create({}), ledgers.create({"application": b"flink"})]
    compactor = ledgers.create({"application": b"pulsar", "component": b"compactor"})
    young = ledgers.create(pulsar_custom_metadata(topics[0], ML), ctime_ms=now_ms - HOUR_MS)
    ManagedLedgerWriter(store).write(TopicName(acme, "lost"), [MISSING], version=None)
    referenced = set().union(*(s.referenced() for s in seeded))
    figures = {
        "ledgers": len(referenced | orphans) + len(foreign) + 2,
        "referenced": len(referenced) + 1,
        "orphans": len(orphans),
        "foreign": len(foreign),
        "unattributable": 1,
        "young": 1,
        "dangling": 1,
    }
    assert not ({compactor, young} | set(foreign)) & (referenced | orphans)
    return orphans, figures


def report_ids(report: Path, status: str) -> set[int]:
    rows = duckdb.execute(
        "SELECT ledger_id FROM read_parquet(?, hive_partitioning = true) WHERE status = ?",
        [f"{report}/unreferenced/*/*.parquet", status],
    ).fetchall()
    return {int(row[0]) for row in rows}


def events(event_dir: Path, app_id: str) -> list[dict[str, Any]]:
    """The application's event log (one uncompressed JSON file: see the submission's conf)."""
    log = event_dir / app_id
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def first_stage(log: list[dict[str, Any]], markers: tuple[str, ...], without: str = "") -> int:
    """The first completed stage whose RDDs' names contain every marker (and not `without`)."""
    for event in log:
        if event["Event"] == "SparkListenerStageCompleted":
            names = " ".join(rdd["Name"] for rdd in event["Stage Info"]["RDD Info"])
            if all(m in names for m in markers) and not (without and without in names):
                return int(event["Stage Info"]["Stage ID"])
    raise AssertionError(f"no stage with {markers}")


def test_the_project_zip_holds_every_package_of_the_distribution(tmp_path: Path) -> None:
    """What executors import comes from this zip: a package missing from it would be found
    only on a cluster without the project installed."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    included = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert set(PROJECT_PACKAGES) == {pattern.rstrip("*") for pattern in included}
    with zipfile.ZipFile(build_project_zip(tmp_path / "janitor.zip")) as archive:
        names = set(archive.namelist())
    assert "deletion/domain/pending_delete_ledger_info.avsc" in names  # data files too
    assert "audit/scan/ledgers.py" in names and "ledger_janitor/audit_main.py" in names
    assert not [name for name in names if "__pycache__" in name]


@pytest.mark.timeout(600)
def test_spark_submit_to_a_standalone_cluster_finds_exactly_the_planted_orphans(
    zookeeper: ZooKeeperServer,
    chroot: str,
    store: ZooKeeperMetadataStore,
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    now_ms = int(time.time() * 1000) + 48 * HOUR_MS
    orphans, expected = plant(store, now_ms)
    assert 200 < expected["ledgers"] < 1000 and len(orphans) > 40
    janitor_zip = build_project_zip(tmp_path / "janitor.zip")
    event_dir = tmp_path / "events"
    event_dir.mkdir()
    report = tmp_path / "report"

    with SparkCluster(tmp_path / "cluster", workers=2, cores=1, memory="512m") as cluster:
        workers = {w["id"]: w for w in cluster.master_state()["workers"]}
        submitted = time.monotonic()
        submission = cluster.submit(
            REPO / "ledger_janitor" / "audit_main.py",
            ["--metadata-store", f"zk:{zookeeper.hosts}{chroot}", "--now", str(now_ms),
             "--min-age", "24h", "--output", str(report), "--json"],
            py_files=[janitor_zip],
            timeout=300,
            conf={
                "spark.eventLog.enabled": "true",
                "spark.eventLog.dir": event_dir.as_uri(),
                "spark.eventLog.compress": "false",
                "spark.eventLog.rolling.enabled": "false",
                "spark.sql.shuffle.partitions": "4",
                # Start once both executors are up, so that the scan is spread over both.
                "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            },
        )  # fmt: skip
        assert submission.returncode == 3, submission.stderr[-5000:]  # the dangling one
        master = cluster.master_state()
        worker_states = cluster.worker_states()

    figures = json.loads(submission.stdout.strip().splitlines()[-1])
    assert {k: figures[k] for k in expected} == expected
    assert report_ids(report, "orphan") == orphans

    # The application ran on the cluster, not in local mode: the master lists it as done...
    (app,) = master["completedapps"]
    assert (app["name"], app["state"]) == ("ledger-janitor-audit", "FINISHED")
    assert master["activeapps"] == []
    # ...and each worker ran an executor of it, which fetched the project's zip.
    executor_ids: dict[str, str] = {}
    for worker in worker_states:
        (executor,) = [e for e in worker["finishedexecutors"] if e["appid"] == app["id"]]
        executor_ids[worker["id"]] = str(executor["id"])
    assert set(executor_ids) == set(workers)
    executor_dirs = {
        worker: next(cluster.root.glob(f"worker-*/work/{app['id']}/{executor}"))
        for worker, executor in executor_ids.items()
    }
    assert len(set(executor_dirs.values())) == 2
    for directory in executor_dirs.values():
        assert (directory / "janitor.zip").is_file()

    # Separate JVMs, neither the driver: each executor logged its own process id.
    pids = set()
    for directory in executor_dirs.values():
        found = re.search(
            r"Started daemon with process name: (\d+)@", (directory / "stderr").read_text()
        )
        assert found, directory
        pids.add(int(found[1]))
    assert len(pids) == 2 and submission.pid not in pids

    # Every task ran on those two executors (none on the driver), and both scanned ZooKeeper:
    # the inventory's first stage (over parallelized buckets, yielding `ctime_ms` rows) and
    # the reference scan's topic listing (over parallelized namespaces) ran on each.
    log = events(event_dir, app["id"])
    ran_on: dict[int, set[str]] = {}
    for event in log:
        if event["Event"] == "SparkListenerTaskEnd":
            ran_on.setdefault(event["Stage ID"], set()).add(event["Task Info"]["Executor ID"])
    both = set(executor_ids.values())
    assert set().union(*ran_on.values()) == both
    scan = ("ParallelCollectionRDD", "PythonRDD")  # Python code over a parallelized list
    inventory_scan = first_stage(log, (*scan, "ctime_ms"))
    topic_listing = first_stage(log, scan, without="Scan ExistingRDD")
    assert ran_on[inventory_scan] == both and ran_on[topic_listing] == both, ran_on
    print(
        f"\nstandalone-cluster audit: {submitted - started:.1f} s to plant and start the"
        f" cluster, {time.monotonic() - submitted:.1f} s for spark-submit"
    )
