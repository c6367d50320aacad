"""The audit's figures in Prometheus text format, for node_exporter's textfile collector.

Written only when an audit finishes (exit code 0 or 3): a failed audit leaves the last good
file in place, so `ledger_janitor_audit_last_success_timestamp_seconds` goes stale and an
alert on its age fires. The file is written whole by prometheus_client's `write_to_textfile`
(a temporary file beside it, then a rename): the collector never reads half of it. No
PySpark here. Names: the project's metric contract (see the README).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from audit.schema import ORPHAN, STATUSES

PREFIX = "ledger_janitor_audit_"
_FIGURE = {ORPHAN: "orphans"}  # the figures' key of a status, where it is not the status


def audit_registry(
    figures: Mapping[str, Any], finished_s: float, duration_s: float
) -> CollectorRegistry:
    """The gauges of one finished audit; `figures` as the `audit --json` line holds them."""
    registry = CollectorRegistry(auto_describe=True)

    def gauge(name: str, text: str, value: float) -> None:
        Gauge(PREFIX + name, text, registry=registry).set(value)

    orphans = Gauge(
        PREFIX + "orphan_ledgers",
        "Unreferenced ledgers the last audit found, by status (only orphan is ever enqueued).",
        ["status"],
        registry=registry,
    )
    for status in STATUSES:
        orphans.labels(status=status).set(int(figures.get(_FIGURE.get(status, status), 0)))
    by_component = Gauge(
        PREFIX + "orphan_ledgers_by_component",
        "The orphans the last audit found, by component (a kind of ledger of its own, e.g. "
        "COMPACTED_LEDGER or DELAYED_INDEX_BUCKET, by its kind); the components it found only.",
        ["component"],
        registry=registry,
    )
    for component, count in dict(figures.get("orphans_by_component") or {}).items():
        by_component.labels(component=component).set(int(count))
    gauge(
        "reclaimable_bytes",
        "Known bytes of the orphan ledgers and orphan offloaded copies the last audit found.",
        int(figures.get("reclaimable_bytes", 0)),
    )
    gauge(
        "dangling_references",
        "Ledgers Pulsar's metadata references that BookKeeper does not have (possible data loss).",
        int(figures.get("dangling", 0)),
    )
    gauge(
        "missing_data_ledgers",
        "Ledgers whose data is gone: dangling references and offloaded copies missing from "
        "tiered storage, each ledger once (possible data loss).",
        int(figures.get("missing_ledgers", 0)),
    )
    gauge(
        "last_success_timestamp_seconds",
        "Unix time the last audit that finished (exit code 0 or 3) finished.",
        finished_s,
    )
    gauge("duration_seconds", "How long the last finished audit took, in seconds.", duration_s)
    return registry


def write_metrics(
    path: Path, figures: Mapping[str, Any], finished_s: float, duration_s: float
) -> None:
    """`path` replaced whole by the audit's gauges."""
    write_to_textfile(str(path), audit_registry(figures, finished_s, duration_s))
