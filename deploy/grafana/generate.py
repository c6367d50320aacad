"""The ledger-janitor Grafana dashboard, built with grafanalib (typed panels and targets).

    python deploy/grafana/generate.py > deploy/grafana/ledger-janitor.json

tests/deploy/test_dashboard.py checks the committed JSON is this script's output, and the
real-Prometheus test runs every panel's query.
"""

from __future__ import annotations

import json
import sys

from grafanalib._gen import DashboardEncoder
from grafanalib.core import (
    Dashboard,
    GridPos,
    RowPanel,
    Stat,
    Target,
    Template,
    Templating,
    Time,
    TimeSeries,
)

DS = "${datasource}"
RATE = "$__rate_interval"
WIDTH, HEIGHT = 12, 8
DATASOURCE = Template(name="datasource", label="Data source", type="datasource", query="prometheus")


def target(expr: str, legend: str = "", ref: str = "A") -> Target:
    return Target(expr=expr, legendFormat=legend, refId=ref, datasource=DS)


def series(title: str, targets: list[Target], unit: str, x: int, y: int, text: str) -> TimeSeries:
    return TimeSeries(
        title=title,
        description=text,
        dataSource=DS,
        targets=targets,
        unit=unit,
        gridPos=GridPos(h=HEIGHT, w=WIDTH, x=x, y=y),
    )


def stat(title: str, expr: str, unit: str, x: int, y: int, text: str) -> Stat:
    return Stat(
        title=title,
        description=text,
        dataSource=DS,
        targets=[target(expr)],
        format=unit,
        reduceCalc="lastNotNull",
        gridPos=GridPos(h=4, w=6, x=x, y=y),
    )


def dashboard() -> Dashboard:
    handled = "ledger_janitor_messages_handled_total"
    buckets = f"sum by (le) (rate(ledger_janitor_deletion_seconds_bucket[{RATE}]))"
    hits = f"sum(rate(ledger_janitor_in_use_cache_hits_total[{RATE}]))"
    misses = f"sum(rate(ledger_janitor_in_use_cache_misses_total[{RATE}]))"
    panels = [
        RowPanel(title="Sidecars", gridPos=GridPos(h=1, w=24, x=0, y=0)),
        stat(
            "Workers running", "sum(ledger_janitor_up)", "none", 0, 1, "Sidecars whose worker runs."
        ),
        stat(
            "Ready", "sum(ledger_janitor_ready)", "none", 6, 1, "Sidecars answering 200 on /ready."
        ),
        stat(
            "Namespaces watched",
            "max(ledger_janitor_watched_namespaces)",
            "none",
            12,
            1,
            "Namespaces whose deletion topics a worker consumes.",
        ),
        stat(
            "Oldest due message waiting",
            "max(ledger_janitor_oldest_held_message_age_seconds)",
            "s",
            18,
            1,
            "Age past its due time of the oldest pending deletion not yet handled.",
        ),
        RowPanel(title="Phase two", gridPos=GridPos(h=1, w=24, x=0, y=5)),
        series(
            "Deletions by outcome",
            [target(f"sum by (outcome) (rate({handled}[{RATE}]))", "{{outcome}}")],
            "ops",
            0,
            6,
            "Pending deletions handled a second, by outcome (deleted, already_gone, "
            "reconsumed, archived, ...).",
        ),
        series(
            "Ledgers deleted",
            [
                target(
                    "sum by (component, ledger_type) "
                    f"(rate(ledger_janitor_ledgers_deleted_total[{RATE}]))",
                    "{{component}} {{ledger_type}}",
                )
            ],
            "ops",
            12,
            6,
            "Ledgers deleted a second, by the topic component owning them.",
        ),
        series(
            "Deletion time (check and delete)",
            [
                target(f"histogram_quantile(0.5, {buckets})", "p50", "A"),
                target(f"histogram_quantile(0.99, {buckets})", "p99", "B"),
            ],
            "s",
            0,
            14,
            "From a due batch's hand-over to its ledgers deleted: the check and the delete.",
        ),
        series(
            "Held messages",
            [target("sum by (namespace) (ledger_janitor_messages_held)", "{{namespace}}")],
            "short",
            12,
            14,
            "Pending deletions received before their due time and held until then.",
        ),
        series(
            "In-use cache hit rate",
            [target(f"{hits} / ({hits} + {misses})", "hit rate")],
            "percentunit",
            0,
            22,
            "Share of in-use look-ups answered from the cache of referenced ledgers.",
        ),
        series(
            "Archive backlog",
            [target("max by (namespace) (ledger_janitor_archive_backlog)", "{{namespace}}")],
            "short",
            12,
            22,
            "Archived pending deletions not yet drained (needs webServiceUrl).",
        ),
        RowPanel(title="Audit", gridPos=GridPos(h=1, w=24, x=0, y=30)),
        series(
            "Orphan ledgers",
            [target("sum by (status) (ledger_janitor_audit_orphan_ledgers)", "{{status}}")],
            "short",
            0,
            31,
            "Unreferenced ledgers the last audit found, by status.",
        ),
        series(
            "Bytes reclaimable",
            [target("max(ledger_janitor_audit_reclaimable_bytes)", "reclaimable")],
            "bytes",
            12,
            31,
            "What deleting the last audit's orphans would free.",
        ),
        stat(
            "Dangling references",
            "max(ledger_janitor_audit_dangling_references)",
            "none",
            0,
            39,
            "Metadata pointing at missing ledgers: possible data loss.",
        ),
        stat(
            "Ledgers with missing data",
            "max(ledger_janitor_audit_missing_data_ledgers)",
            "none",
            6,
            39,
            "Referenced ledgers or offloaded objects that are gone.",
        ),
        stat(
            "Since the last audit",
            "time() - max(ledger_janitor_audit_last_success_timestamp_seconds)",
            "s",
            12,
            39,
            "Time since an audit last finished.",
        ),
        stat(
            "Last audit's duration",
            "max(ledger_janitor_audit_duration_seconds)",
            "s",
            18,
            39,
            "How long the last audit ran.",
        ),
    ]
    return Dashboard(
        title="ledger-janitor",
        uid="ledger-janitor",
        description="Two-phase deletion of Apache Pulsar ledgers: the sidecars and the audit.",
        tags=["pulsar", "ledger-janitor"],
        timezone="browser",
        refresh="30s",
        time=Time("now-6h", "now"),
        templating=Templating(
            [
                Template(
                    name="datasource", label="Data source", type="datasource", query="prometheus"
                )
            ]
        ),
        panels=panels,
    ).auto_panel_ids()


def main() -> None:
    data = dashboard().to_json_data()
    json.dump(data, sys.stdout, cls=DashboardEncoder, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
