"""`ledger-janitor audit --enqueue` on the embedded default and on ZooKeeper: exactly the old,
attributable orphans are enqueued, and a real worker deletes those and nothing else."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import typer
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory, Recorder, sqlite_backend
from ledger_janitor.commands.audit import audit_command
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder
from tests.integration.audit.planting import ZkLedgers

HOUR_MS = 3_600_000
MISSING = 10**9  # referenced by metadata, never created


def cli_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("audit")(audit_command)

    @app.callback()
    def _group() -> None:
        """ledger-janitor, as far as this test needs it."""

    return app


def make_young(backend: Backend, custom: dict[str, bytes], ctime_ms: int) -> int:
    """A ledger created `ctime_ms`: the embedded store's own column, or BookKeeper's ctime."""
    if backend.name == "sqlite":
        ledger_id = backend.factory.create_ledger(custom)
        path = backend.metadata_url.removeprefix("sqlite:")
        with sqlite3.connect(path) as conn:
            conn.execute(
                "UPDATE ledgers SET ctime_ms = ? WHERE ledger_id = ?", (ctime_ms, ledger_id)
            )
        return ledger_id
    return ZkLedgers(backend.metadata).create(custom, ctime_ms=ctime_ms, ledger_id=900_000)


def test_audit_enqueues_exactly_the_orphans_and_the_worker_deletes_them(
    spark: SparkSession,
    janitor: JanitorFactory,
    broker: EmbeddedBroker,
    namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    backend = janitor.backend
    store, ledgers = backend.metadata, backend.factory
    other = NamespaceName(namespace.tenant, "other")
    orders = [TopicName(namespace, f"orders-partition-{i}") for i in range(2)]
    events = TopicName(namespace, "events v2:raw")
    ml, schema = LedgerComponent.MANAGED_LEDGER, LedgerComponent.SCHEMA_STORAGE
    # Leaks from long ago, older than what their topics reference now.
    leaked = ledgers.create_ledger(pulsar_custom_metadata(orders[0], ml))
    leaked_schema = ledgers.create_ledger(pulsar_custom_metadata(events, schema))
    seeder = TopicSeeder(store, ledgers)
    seeded = [seeder.seed(t, 3, schema_versions=int(i == 0)) for i, t in enumerate(orders)]
    seeded.append(seeder.seed(events, 2, schema_versions=2))
    old_cursor = seeder.rotate_cursor(seeded[1])
    trimmed = seeded[0].ledgers[0]
    seeder.release(seeded[0], [trimmed])  # trimmed, but its deletion was never enqueued
    of_deleted_topic = ledgers.create_ledger(pulsar_custom_metadata(TopicName(other, "gone"), ml))
    orphans = {leaked, leaked_schema, old_cursor, trimmed, of_deleted_topic}
    # Never to be enqueued: not Pulsar's, not deletable through the protocol, too young.
    foreign = {ledgers.create_ledger({}), ledgers.create_ledger({"application": b"flink"})}
    compactor = ledgers.create_ledger({"application": b"pulsar", "component": b"compactor"})
    now_ms = int(time.time() * 1000) + 48 * HOUR_MS
    young = make_young(backend, pulsar_custom_metadata(orders[1], ml), now_ms - HOUR_MS)
    ManagedLedgerWriter(store).write(TopicName(other, "lost"), [MISSING], version=None)
    referenced = set().union(*(s.referenced() for s in seeded))
    survivors = referenced | foreign | {compactor, young}

    report = tmp_path / "report"
    result = CliRunner().invoke(
        cli_app(),
        ["audit", "--metadata-store", backend.metadata_url, "--broker-url", broker.service_url,
         "--now", str(now_ms), "--min-age", "24h", "--output", str(report), "--enqueue",
         "--json", "--set", "sendDelaySecondsOfTwoPhaseDeletion=0"],
    )  # fmt: skip

    assert result.exit_code == 3, result.output  # the missing ledger: possible data loss
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["ledgers"] == len(orphans | survivors)
    assert figures["referenced"] == len(referenced) + 1  # the missing one too
    assert (figures["orphans"], figures["enqueued"], figures["dangling"]) == (5, 5, 1)
    assert (figures["foreign"], figures["unattributable"], figures["young"]) == (2, 1, 1)
    assert figures["seconds"] > 0 and figures["dry_run"] is False
    listed = spark.read.parquet(str(report / "unreferenced")).collect()
    assert {r["ledger_id"] for r in listed if r["status"] == "orphan"} == orphans
    assert {r["ledger_id"] for r in listed if r["status"] == "foreign"} == foreign
    assert [r["ledger_id"] for r in spark.read.parquet(str(report / "dangling")).collect()] == [
        MISSING
    ]

    recorder = Recorder()
    # The audit judged ages at --now, two days ahead; the worker's own grace rule must see
    # the same old ledgers (a ledger of a deleted topic is deleted only once old enough).
    janitor.worker(recorder, min_ledger_age_seconds_of_two_phase_deletion=0)
    recorder.wait_for(lambda results: len(results) >= len(orphans), timeout=60)
    assert {r.info.ledger_id for r in recorder.results if r.info} == orphans
    assert all(r.outcome is Outcome.DELETED for r in recorder.results), recorder.results
    assert not any(backend.exists(i) for i in orphans)
    assert all(backend.exists(i) for i in survivors)
    namespaces = {str(r.info.topic_name.namespace) for r in recorder.results if r.info}
    assert namespaces == {str(namespace), str(other)}


def test_a_dry_run_on_the_embedded_default_enqueues_nothing(
    spark: SparkSession, namespace: NamespaceName, tmp_path: Path
) -> None:
    backend = sqlite_backend(str(tmp_path / "janitor.db"))
    try:
        seeder = TopicSeeder(backend.metadata, backend.factory)
        seeded = seeder.seed(TopicName(namespace, "t"), 3)
        released = seeded.ledgers[0]
        seeder.release(seeded, [released])
        later = int(time.time() * 1000) + 48 * HOUR_MS
        result = CliRunner().invoke(
            cli_app(),
            ["audit", "--metadata-store", backend.metadata_url, "--now", str(later), "--json"],
        )
        assert result.exit_code == 0, result.output
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        assert (figures["orphans"], figures["enqueued"], figures["dry_run"]) == (1, 0, True)
        assert figures["output"] is None
        # The embedded store is read and counted on the driver: no job before the tally's.
        steps, jobs = figures["timings"]["steps"], dict(figures["timings"]["jobs"])
        assert [name for name, _ in steps] == list(jobs)
        by_step = {name.split(":")[0]: count for name, count in jobs.items()}
        assert by_step["inventory"] == by_step["references"] == 0, jobs
        assert next(n for step, n in jobs.items() if step.startswith("classifying")) >= 1, jobs
        assert "dry run: 1 orphan found" in result.stderr
        assert backend.exists(released)
    finally:
        backend.ledgers.close()
        backend.metadata.close()
