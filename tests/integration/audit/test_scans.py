"""The distributed scans against a real ZooKeeper laid out as BookKeeper and Pulsar lay it out."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as sf
from rich.console import Console

from audit.errors import AuditError
from audit.options import AuditOptions
from audit.pipeline import run_audit
from audit.progress import ScanProgress
from audit.scan.input_check import Known, checked_rows
from audit.scan.ledgers import ZooKeeperTarget, expand_buckets, zookeeper_inventory
from audit.scan.references import metadata_references
from audit.session import shuffle_partitions_for
from config import parse_store_url
from core.errors import LayoutError, MetadataError
from deletion.adapters.opening import StoreSpec, make_embedded_store
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path
from deletion.wire.metadata_codec import wrap
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, ManagedCursorInfo
from harness.janitor import chrooted, make_chroot
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import free_port
from ledger_janitor.demo.seeding import TopicSeeder
from tests.integration.audit.planting import BOOKKEEPER_OWN, ZkLedgers, write_offloaded

ACME, BETA = NamespaceName("acme", "orders"), NamespaceName("beta", "billing")


def at(hosts: str, timeout: float = 30.0) -> StoreSpec:
    return StoreSpec(parse_store_url(f"zk:{hosts}"), timeout)


@pytest.fixture
def store(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[ZooKeeperMetadataStore]:
    opened = chrooted(zookeeper.hosts, chroot)
    yield opened
    opened.close()


def test_buckets_expand_to_enough_partitions_without_descending_into_ledgers() -> None:
    tree = {
        "/ledgers": ["00", "000", "LAYOUT", "idgen", "available", "junk"],
        "/ledgers/00": ["0000", "0001"],
        "/ledgers/000": ["0000"],
        "/ledgers/000/0000": ["0000", "0002"],
        "/ledgers/000/0000/0000": ["0000"],
        "/ledgers/000/0000/0002": ["0001"],
    }
    children = lambda path: tree.get(path, [])  # noqa: E731
    assert expand_buckets(children, "/ledgers", 1) == ["00", "000", "junk"]
    assert expand_buckets(children, "/ledgers", 100) == [
        "00/0000",
        "00/0001",
        "000/0000/0000/0000",
        "000/0000/0002/0001",
        "junk",
    ]


def test_inventory_scan_reads_every_ledger_of_both_layouts(
    spark: SparkSession, store: ZooKeeperMetadataStore, zookeeper: ZooKeeperServer, chroot: str
) -> None:
    for node in BOOKKEEPER_OWN:
        store.create(node, b"")
    ledgers = ZkLedgers(store)
    topic = TopicName(ACME, "orders")
    short = [ledgers.of(topic, LedgerComponent.MANAGED_LEDGER, ledger_id=i) for i in (1, 2, 10_001)]
    big = ledgers.of(topic, LedgerComponent.MANAGED_CURSOR, ledger_id=123_456_789, length=4096)
    long_ids = [ledgers.create({}, ledger_id=2**33 + i) for i in (0, 10_000)]
    stamped = ledgers.create({"application": b"pulsar"}, ctime_ms=1_000, ledger_id=77)
    store.create("/ledgers/00/0000/L0099", b"not ledger metadata")
    before = int(time.time() * 1000)

    target = ZooKeeperTarget(at(f"{zookeeper.hosts}{chroot}"))
    rows = {r["ledger_id"]: r for r in zookeeper_inventory(spark, target).collect()}

    assert set(rows) == {*short, big, *long_ids, stamped, 99}
    assert rows[big]["size"] == 4096 and rows[1]["size"] is None
    assert rows[big]["custom_metadata"]["pulsar/cursor"] == "sub"
    assert rows[stamped]["ctime_ms"] == 1_000  # the metadata's own ctime wins
    assert all(abs(rows[i]["ctime_ms"] - before) < 120_000 for i in short)  # the znode's ctime
    assert rows[99]["custom_metadata"] is None  # undecodable: kept, never attributable
    assert rows[long_ids[0]]["custom_metadata"] == {}


def test_inventory_scan_refuses_a_store_without_a_ledger_tree(
    spark: SparkSession, store: ZooKeeperMetadataStore, zookeeper: ZooKeeperServer, chroot: str
) -> None:
    store.delete("/ledgers/LAYOUT")  # a ledgers root, but not BookKeeper's
    where = f"ZooKeeper at {zookeeper.hosts}{chroot}"
    with pytest.raises(LayoutError, match=f"no /ledgers/LAYOUT in {where}: wrong store"):
        zookeeper_inventory(spark, ZooKeeperTarget(at(f"{zookeeper.hosts}{chroot}")))


def test_an_unreachable_zookeeper_aborts(spark: SparkSession) -> None:
    with pytest.raises(MetadataError, match="cannot reach ZooKeeper"):
        zookeeper_inventory(spark, ZooKeeperTarget(at(f"127.0.0.1:{free_port()}", timeout=1)))


def test_reference_scan_sees_what_the_worker_sees(
    spark: SparkSession, store: ZooKeeperMetadataStore, zookeeper: ZooKeeperServer, chroot: str
) -> None:
    ledgers = ZkLedgers(store)
    seeder = TopicSeeder(store, ledgers)
    seeded = [
        seeder.seed(TopicName(ACME, f"orders-partition-{i}"), 3, schema_versions=2 * (i == 0))
        for i in range(2)
    ]
    encoded = seeder.seed(TopicName(BETA, "events v2:raw"), 2, schema_versions=1)
    for path, kind in (
        (managed_ledger_path(encoded.topic), CompressionType.ZSTD),
        (f"{managed_ledger_path(encoded.topic)}/sub", CompressionType.LZ4),
    ):
        node = store.get(path)
        assert node is not None
        store.set(path, wrap(node.data, kind))
    compaction = ManagedCursorInfo(cursorsLedgerId=-1)
    compaction.properties.add(name="CompactedTopicLedger", value=4242)
    store.create(
        f"{managed_ledger_path(seeded[0].topic)}/__compaction", compaction.SerializeToString()
    )
    write_offloaded(store, TopicName(BETA, "archive"), {500: True, 501: False})

    rows = metadata_references(spark, at(f"{zookeeper.hosts}{chroot}")).frame.collect()

    by_topic: dict[str, set[int]] = {}
    for row in rows:
        by_topic.setdefault(row["topic"], set()).add(row["ledger_id"])
    in_use = MetadataInUseLedgers(store)
    for s in [*seeded, encoded]:
        assert by_topic[str(s.topic)] | by_topic.get(str(s.topic.base), set()) >= s.referenced()
        assert in_use.fetch(s.topic).ledger_ids <= by_topic[str(s.topic)] | by_topic.get(
            str(s.topic.base), set()
        )
    components = {(r["ledger_id"], r["component"], r["bookkeeper_deleted"]) for r in rows}
    assert (4242, "COMPACTED", False) in components
    assert (seeded[0].cursor_ledger, "MANAGED_CURSOR", False) in components
    assert (encoded.schema_ledgers[0], "SCHEMA_STORAGE", False) in components
    assert {(500, "MANAGED_LEDGER", True), (501, "MANAGED_LEDGER", False)} <= components
    assert {r["namespace"] for r in rows} == {"acme/orders", "beta/billing"}
    assert metadata_references(spark, at(f"{zookeeper.hosts}{chroot}")).known is None


def _jobs(spark: SparkSession) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup())


def test_the_embedded_store_is_read_and_counted_on_the_driver_like_zookeeper_on_executors(
    spark: SparkSession,
    store: ZooKeeperMetadataStore,
    zookeeper: ZooKeeperServer,
    chroot: str,
    tmp_path: Path,
) -> None:
    """One local file: executors elsewhere would not see it, so the driver reads it; its rows
    and ids are counted as read, so no Spark job runs before the classification."""
    path = tmp_path / "janitor.db"
    make_embedded_store(path)
    embedded = SqliteMetadataStore(path)
    truth: dict[str, set[int]] = {}
    for target in (store, embedded):
        seeder = TopicSeeder(target, ZkLedgers(target, first_id=70))
        for topic, count, schemas in ((TopicName(ACME, "t1"), 3, 1), (TopicName(BETA, "t"), 2, 0)):
            seeded = seeder.seed(topic, count, schema_versions=schemas)
            assert truth.setdefault(str(topic), seeded.referenced()) == seeded.referenced()
    embedded.close()

    before = _jobs(spark)
    scan = metadata_references(spark, StoreSpec(parse_store_url(f"sqlite:{path}")))
    assert _jobs(spark) == before, "the driver's read ran a Spark job"
    read = scan.frame.collect()
    scanned = metadata_references(spark, at(f"{zookeeper.hosts}{chroot}")).frame.collect()

    def by_topic(rows: list[Row]) -> dict[str, set[int]]:
        found: dict[str, set[int]] = {}
        for row in rows:
            found.setdefault(row["topic"], set()).add(row["ledger_id"])
        return found

    assert by_topic(read) == by_topic(scanned) == truth
    assert sorted(map(tuple, read)) == sorted(map(tuple, scanned))
    ids = [ledger_id for ledgers in truth.values() for ledger_id in ledgers]
    assert scan.known == Known(len(read), 0, (min(ids), max(ids)))


def test_known_figures_refuse_what_the_job_refuses_and_count_what_it_counts(
    spark: SparkSession,
) -> None:
    assert Known.of([5, None, 3, -1, 9]) == Known(5, 2, (-1, 9))
    assert Known.of([]) == Known(0, 0, None)
    frame = spark.range(0).withColumnRenamed("id", "ledger_id")
    before = _jobs(spark)
    with pytest.raises(AuditError, match="rows without a valid ledger_id"):
        checked_rows(frame, "the inventory scan", known=Known.of([1, None]))
    known = Known.of([1, None, 4])
    assert checked_rows(frame, "refs", ids_required=False, known=known)[1:] == (3, (1, 4))
    assert _jobs(spark) == before


def test_a_small_audit_shuffles_into_fewer_partitions_and_gives_the_setting_back(
    spark: SparkSession,
) -> None:
    key = "spark.sql.shuffle.partitions"
    configured = spark.conf.get(key)
    assert configured == "2"  # the suite's session
    with shuffle_partitions_for(spark, 42):
        assert spark.conf.get(key) == "1"
    assert spark.conf.get(key) == configured
    with shuffle_partitions_for(spark, 10_000_000):  # never more than configured
        assert spark.conf.get(key) == configured
    with pytest.raises(RuntimeError), shuffle_partitions_for(spark, 1):
        raise RuntimeError("the audit failed")
    assert spark.conf.get(key) == configured


def test_building_a_query_asks_the_jvm_nothing_about_the_python_call_site(
    spark: SparkSession,
) -> None:
    """PySpark's DataFrame debugging is off in the audit's sessions: a column built costs
    its own py4j calls, not five more each to record which Python line built it."""
    from py4j.java_gateway import GatewayClient  # type: ignore[import-untyped]

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    sent: list[str] = []
    send = GatewayClient.send_command

    def counted(self: Any, command: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(command)
        return send(self, command, *args, **kwargs)

    GatewayClient.send_command = counted
    try:
        sf.coalesce(sf.col("a"), sf.lit(False))
    finally:
        GatewayClient.send_command = send
    assert sent  # the column was built in the JVM
    assert not any("PySparkCurrentOrigin" in command for command in sent)


def _options(zookeeper: ZooKeeperServer, chroot: str, references_chroot: str) -> AuditOptions:
    return AuditOptions(
        now_ms=int(time.time() * 1000),
        min_age_ms=0,
        metadata=at(f"{zookeeper.hosts}{references_chroot}"),
        ledgers=at(f"{zookeeper.hosts}{chroot}"),
    )


def test_unreadable_metadata_aborts_the_audit(
    spark: SparkSession, store: ZooKeeperMetadataStore, zookeeper: ZooKeeperServer, chroot: str
) -> None:
    ledgers = ZkLedgers(store)
    seeder = TopicSeeder(store, ledgers)
    seeder.seed(TopicName(ACME, "good"), 2)
    bad = seeder.seed(TopicName(ACME, "bad"), 2)
    store.set(managed_ledger_path(bad.topic), b"\x47\x78\x00\x00\x00\x02\xff\xff")
    progress = ScanProgress(spark.sparkContext, Console(quiet=True))
    with pytest.raises(AuditError, match=r"reference scan failed.*acme/orders/persistent/bad"):
        run_audit(spark, _options(zookeeper, chroot, chroot), progress)


def test_a_metadata_store_without_references_is_refused(
    spark: SparkSession, store: ZooKeeperMetadataStore, zookeeper: ZooKeeperServer, chroot: str
) -> None:
    TopicSeeder(store, ZkLedgers(store)).seed(TopicName(ACME, "t"), 2)
    progress = ScanProgress(spark.sparkContext, Console(quiet=True))
    # a chroot that does not exist (nothing makes it): Pulsar's roots are missing
    where = f"ZooKeeper at {zookeeper.hosts}{chroot}-wrong"
    with pytest.raises(LayoutError, match=f"no /admin in {where}: wrong store or chroot"):
        run_audit(spark, _options(zookeeper, chroot, chroot + "-wrong"), progress)
    # a cluster's store that holds no topic at all
    make_chroot(zookeeper.hosts, chroot + "-empty")
    with pytest.raises(AuditError, match="no references at all"):
        run_audit(spark, _options(zookeeper, chroot, chroot + "-empty"), progress)
