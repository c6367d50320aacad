"""Tiered-storage orphans and the missing-data report, on a real S3-compatible server (moto in
server mode) and a filesystem offloader layout, with ZooKeeper metadata, the pulsar-lite broker
and a real worker: the audit finds exactly the orphaned copies (a stale-UUID one of a still
referenced ledger included), the worker deletes exactly those, and lost data is reported."""

from __future__ import annotations

import json
import time
import uuid as uuid_lib
from pathlib import Path
from typing import Any

import boto3
import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.chromium import dump_dom
from harness.dom import read_dom
from harness.janitor import JanitorFactory, Recorder
from harness.offload_objects import base_metadata
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.integration.audit.planting import ZkLedgers
from tests.integration.audit.test_end_to_end import cli_app
from tests.integration.audit.tiered_planting import (
    Ledger,
    Offload,
    Planted,
    new_uuid,
    write_managed_ledger,
)

RIVAL = "rival/secret/persistent/ledger"
GRACE = "5s"


def _s3(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = f"offload-{uuid_lib.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    return s3, bucket


@pytest.mark.timeout(420)  # two audits on Spark and a worker, on a shared machine
@pytest.mark.parametrize("backend", ["zookeeper"], indirect=True)
def test_the_audit_finds_exactly_the_orphaned_offloads_and_the_worker_deletes_them(
    spark: SparkSession,
    janitor: JanitorFactory,
    broker: EmbeddedBroker,
    namespace: NamespaceName,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    s3, bucket = _s3(moto_endpoint, monkeypatch)
    base = tmp_path / "offload"
    planted = Planted(s3, bucket, base)
    store = janitor.backend.metadata
    # The namespace exists (its policies): only then is a topic absent from it deleted.
    ManagedLedgerWriter(store).ensure_namespace(namespace)
    topic = TopicName(namespace, "tiered events:v1")  # a name that needs encoding
    gone_topic = TopicName(namespace, "deleted")  # its metadata is gone, its offloads are not
    name = topic.managed_ledger_name
    on_s3 = {"bucket": bucket, "region": "us-east-1", "serviceEndpoint": moto_endpoint}
    on_fs = {"storageBasePath": str(base)}
    u = {key: new_uuid() for key in ("s3", "s3-kept", "s3-lost", "s3-writing", "fs", "fs-lost")}
    referenced = [
        Ledger(101, Offload(u["s3"], "aws-s3", on_s3), bookkeeper_deleted=True),
        Ledger(102, Offload(u["s3-kept"], "aws-s3", on_s3)),  # still in BookKeeper too
        Ledger(103),
        Ledger(104, Offload(u["s3-lost"], "aws-s3", on_s3), bookkeeper_deleted=True, entries=42),
        Ledger(105, entries=7, size=700),  # its BookKeeper metadata is gone
        Ledger(106, Offload(u["fs"], "filesystem", on_fs), bookkeeper_deleted=True),
        Ledger(112, Offload(u["fs-lost"], "filesystem", on_fs), bookkeeper_deleted=True),
        Ledger(114, Offload(u["s3-writing"], "aws-s3", on_s3, complete=False)),
    ]
    write_managed_ledger(store, topic, referenced)
    bookkeeper = ZkLedgers(store)
    for ledger_id in (102, 103, 114):
        custom = pulsar_custom_metadata(topic, LedgerComponent.MANAGED_LEDGER)
        bookkeeper.create(custom, ledger_id=ledger_id, length=1000)
    old = time.time() - 3600

    kept = {
        planted.in_s3(101, u["s3"], name),
        planted.in_s3(102, u["s3-kept"], name),
        planted.in_s3(114, u["s3-writing"], name),
        planted.on_disk(106, u["fs"], name, mtime=old),
        # Pulsar's ownership proof cannot be made: never enqueued.
        planted.in_s3(111, new_uuid(), name, user_metadata_name=None, custom={}),
        planted.in_s3(115, new_uuid(), name, custom=base_metadata(RIVAL)),
    }
    orphans = {
        planted.in_s3(102, new_uuid(), name),  # a failed offload's leftover: another UUID
        planted.in_s3(109, new_uuid(), name),
        planted.in_s3(113, new_uuid(), gone_topic.managed_ledger_name),
        planted.on_disk(106, new_uuid(), name, mtime=old),  # stale UUID on the filesystem
        planted.on_disk(107, new_uuid(), name, mtime=old),
    }
    s3.put_object(Bucket=bucket, Key="unrelated-object", Body=b"x")
    s3.put_object(Bucket=bucket, Key=f"{new_uuid()}-index", Body=b"x")  # streaming offload
    time.sleep(7)  # the young ones below are younger than the grace period, the rest older
    young = {
        planted.in_s3(110, new_uuid(), name),
        planted.on_disk(108, new_uuid(), name, mtime=None),
    }
    now_ms = int(time.time() * 1000) + 1000
    everything_in_s3 = planted.s3_keys()

    config = ["--metadata-store", janitor.backend.metadata_url, "--broker-url", broker.service_url,
              "--now", str(now_ms), "--min-age", GRACE,
              "--set", f"s3ManagedLedgerOffloadBucket={bucket}",
              "--set", f"s3ManagedLedgerOffloadServiceEndpoint={moto_endpoint}",
              "--set", "s3ManagedLedgerOffloadRegion=us-east-1",
              "--set", f"fileSystemOffloadStorageBasePath={base}"]  # fmt: skip

    dry = CliRunner().invoke(cli_app(), ["audit", *config], env={"COLUMNS": "160"})
    assert dry.exit_code == 3, dry.output  # missing data
    lines = dry.stdout.splitlines()
    assert f"tiered storage: s3://{bucket} at {moto_endpoint}, filesystem {base}: 13 offloaded" \
        " ledger copies, 4 referenced" in lines  # fmt: skip
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in lines if "│" in line]
    counts = {(row[0], row[1], row[2]): int(row[3]) for row in cells}  # the only table here
    assert counts == {
        ("orphan", "filesystem", str(namespace)): 2, ("orphan", "s3", str(namespace)): 3,
        ("unattributable", "s3", "-"): 2, ("young", "filesystem", str(namespace)): 1,
        ("young", "s3", str(namespace)): 1,
    }  # fmt: skip
    assert "MISSING DATA: 3 ledgers referenced by metadata are gone from storage" in dry.stdout
    assert f"  bookkeeper: ledger 105 of {topic} (MANAGED_LEDGER), 7 entries, 700 B" in lines
    assert f"  tiered storage: ledger 104 of {topic} (offload {u['s3-lost']}), 42 entries," \
        " 1000 B" in lines  # fmt: skip
    assert f"  tiered storage: ledger 112 of {topic} (offload {u['fs-lost']}), 10 entries," \
        " 1000 B" in lines  # fmt: skip
    assert "dry run: 5 orphaned offloaded ledgers found" in dry.stderr
    assert planted.s3_keys() == everything_in_s3

    report = tmp_path / "report"
    result = CliRunner().invoke(
        cli_app(),
        ["audit", *config, "--output", str(report), "--enqueue", "--json",
         "--set", "sendDelaySecondsOfTwoPhaseDeletion=0"],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert (figures["offloaded_copies"], figures["offload_orphans"]) == (13, 5)
    assert (figures["offload_unattributable"], figures["offload_young"]) == (2, 2)
    assert (figures["missing_offloaded"], figures["missing_bookkeeper"]) == (2, 1)
    assert (figures["offload_enqueued"], figures["enqueued"], figures["dangling"]) == (5, 0, 1)
    listed = spark.read.parquet(str(report / "offloaded")).collect()
    found = {(r["ledger_id"], r["uuid"]) for r in listed if r["status"] == "orphan"}
    assert found == orphans
    assert {(r["ledger_id"], r["uuid"]) for r in listed if r["status"] == "young"} == young
    missing = spark.read.parquet(str(report / "missing")).collect()
    assert {(r["what"], r["ledger_id"], r["offload_uuid"], r["entries"]) for r in missing} == {
        ("bookkeeper", 105, None, 7),
        ("tiered storage", 104, u["s3-lost"], 42),
        ("tiered storage", 112, u["fs-lost"], 10),
    }

    page = read_dom(dump_dom(report / "report.html").stdout)
    offloaded = {(row[0], row[1], row[2]): row[3] for row in page.tables["offloaded"]}
    assert offloaded == {
        ("orphan", "filesystem", str(namespace)): "2", ("orphan", "s3", str(namespace)): "3",
        ("unattributable", "s3", "-"): "2", ("young", "filesystem", str(namespace)): "1",
        ("young", "s3", str(namespace)): "1",
    }  # fmt: skip
    lost = {(row[0], row[1], row[2], row[3], row[4]) for row in page.tables["missing-offloaded"]}
    assert lost == {
        ("104", str(topic), u["s3-lost"], "s3", "42"),
        ("112", str(topic), u["fs-lost"], "filesystem", "10"),
    }

    recorder = Recorder()
    janitor.worker(
        recorder,
        min_ledger_age_seconds_of_two_phase_deletion=0,
        s3_managed_ledger_offload_service_endpoint=moto_endpoint,
        s3_managed_ledger_offload_region="us-east-1",
        file_system_offload_storage_base_path=str(base),
    )
    recorder.wait_for(lambda results: len(results) >= len(orphans), timeout=60)
    assert all(r.outcome is Outcome.DELETED for r in recorder.results), [
        (r.outcome.value, r.reason) for r in recorder.results
    ]
    assert sorted(r.info.ledger_id for r in recorder.results if r.info) == sorted(
        ledger_id for ledger_id, _ in orphans
    )
    survivors = kept | young
    assert planted.s3_keys() == everything_in_s3 - {
        key for copy in orphans if copy in planted.keys for key in planted.keys[copy]
    }
    assert planted.directories() == {planted.dirs[c] for c in survivors if c in planted.dirs}
    assert all(janitor.backend.exists(i) for i in (102, 103, 114))


def test_without_tiered_storage_the_report_says_so_and_lists_missing_ledgers(
    tmp_path: Path,
) -> None:
    references = tmp_path / "references.jsonl"
    inventory = tmp_path / "inventory.jsonl"
    inventory.write_text(json.dumps({"ledger_id": 1, "ctime_ms": 0, "custom_metadata": {}}) + "\n")
    references.write_text(
        json.dumps({"ledger_id": 1, "topic": "a/b/t"}) + "\n"
        + json.dumps({"ledger_id": 77, "topic": "a/b/lost", "component": "MANAGED_LEDGER"}) + "\n"
    )  # fmt: skip
    result = CliRunner().invoke(
        cli_app(),
        ["audit", "--inventory", str(inventory), "--references", str(references),
         "--metadata-store", "sqlite:/nonexistent/janitor.db", "--now", "1700000000000"],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    lines = result.stdout.splitlines()
    assert "tiered storage: not configured" in lines
    assert "MISSING DATA: 1 ledger referenced by metadata is gone from storage" in result.stdout
    assert "  bookkeeper: ledger 77 of a/b/lost (MANAGED_LEDGER), entries and size unknown" in lines
