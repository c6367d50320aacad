"""A real Prometheus (Debian's package, harness/prometheus.py) scrapes a running
`ledger-janitor run` (real ZooKeeper, the embedded broker) every second while it deletes.
Through Prometheus's HTTP API the test sees the deletions counted, and runs every alert
rule's expression and every dashboard query: each returns data, or is listed below with the
reason it is empty."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory, zookeeper_backend
from harness.process import start_sidecar, stop_sidecar, wait_until
from harness.prometheus import PrometheusServer
from harness.pulsar_lite import skip_consumer_ids
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port
from ledger_janitor.demo.seeding import TopicSeeder, pending
from tests.deploy.queries import RULES, metric_names, panel_queries, rule_expressions

AUDIT = "written by `audit --metrics-file` and pushed by the audit CronJob; no audit runs here"
# Metrics that may have no series in this run, and why; every other metric must have data.
MAY_BE_EMPTY = {
    "ledger_janitor_audit_orphan_ledgers": AUDIT,
    "ledger_janitor_audit_reclaimable_bytes": AUDIT,
    "ledger_janitor_audit_dangling_references": AUDIT,
    "ledger_janitor_audit_missing_data_ledgers": AUDIT,
    "ledger_janitor_audit_last_success_timestamp_seconds": AUDIT,
    "ledger_janitor_audit_duration_seconds": AUDIT,
    "ledger_janitor_archive_backlog": "needs an admin URL (webServiceUrl), which pulsar-lite lacks",
    "ledger_janitor_messages_handed_back_total": "nothing was handed back: a labelled counter "
    "has no series before its first increment",
}
# On a healthy sidecar that deletes, every alert is quiet but this one.
FIRING = {"LedgerJanitorAuditStale": "no audit ever ran, so its timestamp is absent"}


def deleted(prometheus: PrometheusServer) -> float:
    result = prometheus.query("sum(ledger_janitor_ledgers_deleted_total)")
    return float(result[0]["value"][1]) if result else 0.0


def test_prometheus_scrapes_a_deleting_sidecar_and_runs_every_rule_and_panel(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    port = free_port()
    run = start_sidecar(
        backend.metadata_url,
        broker.service_url,
        metricsPort=port,
        deletionNamespaces=namespace,
        sendDelaySecondsOfTwoPhaseDeletion=1,  # due a second after phase one, as enqueued
    )
    prometheus = PrometheusServer(
        tmp_path / "prometheus", {"ledger-janitor": [f"127.0.0.1:{port}"]}, [RULES]
    )
    try:
        seeder = TopicSeeder(backend.metadata, backend.factory)
        seeded = seeder.seed(TopicName(namespace, "orders"), ledgers=8)
        phase = janitor.sidecar()
        # pulsar-lite numbers each client's consumers from 0 and refuses a second consumer 0
        # on a subscription: this client's set-up must not collide with the worker's.
        skip_consumer_ids(phase.client, 100)
        prometheus.start()
        assert prometheus.process is not None
        server_pid = prometheus.process.pid
        wait_until(lambda: bool(prometheus.query('up{job="ledger-janitor"} == 1')), 30, "a scrape")

        def delete(ledgers: list[int]) -> None:
            phase.phase_one.enqueue_then_commit(
                [pending(seeded.topic, i) for i in ledgers],
                lambda: seeder.release(seeded, ledgers),
            )

        # Two waves, so the counters have a series before the second: rates see it.
        first, second = seeded.ledgers[:3], seeded.ledgers[3:6]
        delete(first)
        wait_until(lambda: deleted(prometheus) >= 3, 60, "the first deletions in Prometheus", 0.2)
        delete(second)
        wait_until(lambda: deleted(prometheus) >= 6, 60, "all deletions in Prometheus", 0.2)
        assert not any(backend.exists(i) for i in first + second)
        assert deleted(prometheus) == 6
        assert prometheus.query("sum(rate(ledger_janitor_ledgers_deleted_total[1m])) > 0")

        rules, panels = rule_expressions(), panel_queries()
        report = []
        for name in sorted(metric_names(*rules.values(), *panels.values())):
            series = prometheus.query(f"count({name})")
            report.append(f"metric {name}: {len(series)} | {MAY_BE_EMPTY.get(name, '')}")
            assert series or name in MAY_BE_EMPTY, f"{name} has no data in Prometheus"
        for key, expr in panels.items():
            rows = prometheus.query(expr)
            empty_for = [MAY_BE_EMPTY[m] for m in metric_names(expr) if m in MAY_BE_EMPTY]
            report.append(f"panel {key}: {len(rows)} series | {'; '.join(empty_for)}")
            assert rows or empty_for, f"panel {key} shows nothing: {expr}"
        for alert, expr in rules.items():
            rows = prometheus.query(expr)
            report.append(
                f"alert {alert}: {'fires' if rows else 'quiet'} | {FIRING.get(alert, 'healthy')}"
            )
            assert bool(rows) == (alert in FIRING), f"{alert}: {rows}"
        # Prometheus loaded the same rules and evaluates them itself.
        loaded = prometheus.api("rules")["groups"]
        assert {r["name"] for g in loaded for r in g["rules"]} == set(rules)
        assert all(r["health"] == "ok" for g in loaded for r in g["rules"])
        print("\n".join(report))
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
    finally:
        prometheus.stop()
        if run.poll() is None:
            print(stop_sidecar(run)[-4000:])  # the sidecar's log, shown when the test fails
        janitor.close()
        backend.ledgers.close()
    assert prometheus.process is None
    with pytest.raises(ProcessLookupError):  # its whole process group is gone
        os.killpg(server_pid, 0)
