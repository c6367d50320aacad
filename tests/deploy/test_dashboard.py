"""deploy/grafana: the committed dashboard is exactly what its grafanalib generator writes,
shows what the issue asks for, and names only the metrics of the metric contract."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.deploy.deploy_files import DEPLOY
from tests.deploy.queries import DASHBOARD, metric_names, panel_queries, rule_expressions

# The metric names the sidecar and the audit export (the contract: consumers/metrics.py, the
# runtime's gauges and the audit's --metrics-file gauges); prometheus_client adds _total.
CONTRACT = {
    "up",
    "ledger_janitor_messages_received_total",
    "ledger_janitor_early_deliveries_held_total",
    "ledger_janitor_messages_handed_back_total",
    "ledger_janitor_messages_handled_total",
    "ledger_janitor_ledgers_deleted_total",
    "ledger_janitor_deletion_seconds_bucket",
    "ledger_janitor_archive_drained_total",
    "ledger_janitor_in_use_cache_hits_total",
    "ledger_janitor_in_use_cache_misses_total",
    "ledger_janitor_in_use_cache_fetches_total",
    "ledger_janitor_build_info",
    "ledger_janitor_up",
    "ledger_janitor_ready",
    "ledger_janitor_watched_namespaces",
    "ledger_janitor_messages_held",
    "ledger_janitor_oldest_held_message_age_seconds",
    "ledger_janitor_broker_connected",
    "ledger_janitor_metadata_store_reachable",
    "ledger_janitor_archive_backlog",
    "ledger_janitor_audit_orphan_ledgers",
    "ledger_janitor_audit_reclaimable_bytes",
    "ledger_janitor_audit_dangling_references",
    "ledger_janitor_audit_missing_data_ledgers",
    "ledger_janitor_audit_last_success_timestamp_seconds",
    "ledger_janitor_audit_duration_seconds",
}


def test_the_committed_dashboard_is_the_generators_output() -> None:
    generated = subprocess.run(
        [sys.executable, str(DEPLOY / "grafana" / "generate.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert generated == DASHBOARD.read_text(), "run: python deploy/grafana/generate.py > " + str(
        DASHBOARD.relative_to(DEPLOY.parent)
    )


def test_the_dashboard_shows_what_operators_asked_for() -> None:
    queries = panel_queries()
    wanted = {
        "Deletions by outcome": "ledger_janitor_messages_handled_total",
        "Deletion time (check and delete)": "ledger_janitor_deletion_seconds_bucket",
        "Held messages": "ledger_janitor_messages_held",
        "In-use cache hit rate": "ledger_janitor_in_use_cache_misses_total",
        "Archive backlog": "ledger_janitor_archive_backlog",
        "Orphan ledgers": "ledger_janitor_audit_orphan_ledgers",
        "Bytes reclaimable": "ledger_janitor_audit_reclaimable_bytes",
    }
    for title, metric in wanted.items():
        assert any(k.startswith(f"{title}/") and metric in q for k, q in queries.items()), title
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert all(p["datasource"] == "${datasource}" for p in panels if p["type"] != "row")


def test_dashboard_and_rules_name_only_contract_metrics() -> None:
    used = metric_names(*panel_queries().values(), *rule_expressions().values())
    assert used <= CONTRACT, used - CONTRACT
