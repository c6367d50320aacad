"""The HTML report's sections drawn from the summary rows alone (no Spark job): the totals
per status, the bytes reclaimable per namespace (a chart) and the summary table itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Row

from audit.report.chart import bar_chart
from audit.report.page import Column, Section
from audit.schema import ORPHAN, STATUSES, YOUNG
from audit.units import human_bytes

SUMMARY_ROWS = 40  # the summary table's rows; the Parquet summary holds them all
CHART_NAMESPACES = 15  # bars in the bytes-per-namespace chart; the rest are summed in one

_SUMMARY_COLUMNS = (
    ("status", Column("status")),
    ("namespace", Column("namespace")),
    ("component", Column("component")),
    ("ledgers", Column("ledgers", "count")),
    ("bytes", Column("bytes", "bytes")),
    ("ledgers_with_size", Column("sized", "count")),
    ("oldest_ctime_ms", Column("oldest (UTC)", "time")),
)


def _by_size(row: Sequence[Any]) -> tuple[int, int, int, str]:
    """Status in STATUSES order, then the most bytes, then the most ledgers, then the name."""
    status, namespace, _, ledgers, size = row[:5]
    rank = STATUSES.index(status) if status in STATUSES else len(STATUSES)
    return (rank, -int(size or 0), -int(ledgers or 0), str(namespace or ""))


def _young_per_namespace(rows: Sequence[Row]) -> list[tuple[Any, ...]]:
    """Young ledgers, one row per namespace whatever their components: they are not orphans
    yet, and must not crowd the rows that are."""
    merged: dict[str | None, list[Any]] = {}
    for r in rows:
        row = merged.setdefault(r["namespace"], ["young", r["namespace"], set(), 0, None, 0, None])
        row[2].add(r["component"] or "-")
        row[3] += int(r["ledgers"] or 0)
        if r["bytes"] is not None:
            row[4] = (row[4] or 0) + int(r["bytes"])
        row[5] += int(r["ledgers_with_size"] or 0)
        oldest = r["oldest_ctime_ms"]
        row[6] = oldest if row[6] is None or (oldest is not None and oldest < row[6]) else row[6]
    for row in merged.values():
        components = sorted(row[2])
        row[2] = components[0] if len(components) == 1 else f"{len(components)} components"
    return [tuple(row) for row in merged.values()]


def summary_section(summary: Sequence[Row]) -> Section:
    fields = [field for field, _ in _SUMMARY_COLUMNS]
    rows = [tuple(r[f] for f in fields) for r in summary if r["status"] != YOUNG]
    rows += _young_per_namespace([r for r in summary if r["status"] == YOUNG])
    rows.sort(key=_by_size)
    return Section(
        key="summary",
        title="Ledgers Pulsar's metadata does not reference, by status, namespace and component",
        explanation="Only orphans are ever enqueued; the others are listed for a person to judge."
        " Unknown: compacted ledgers whose topic may still read them (its __compaction cursor"
        " records which in its own ledger) and whose broker was not asked or did not answer."
        " Each status lists the namespaces holding the most bytes first; young ledgers (inside"
        " the grace period) are summed per namespace, last. Bytes count the ledgers whose size"
        " is known (closed ledgers).",
        columns=tuple(column for _, column in _SUMMARY_COLUMNS),
        rows=tuple(rows[:SUMMARY_ROWS]),
        total=len(rows),
        empty="No unreferenced ledgers.",
    )


def totals_section(summary: Sequence[Row]) -> Section:
    totals = {status: [0, 0, 0] for status in STATUSES}
    for r in summary:
        found = totals.setdefault(r["status"], [0, 0, 0])
        found[0] += int(r["ledgers"] or 0)
        found[1] += int(r["bytes"] or 0)
        found[2] += int(r["ledgers_with_size"] or 0)
    return Section(
        key="totals",
        title="Totals by status",
        explanation="Every unreferenced ledger has one status; only orphans are ever enqueued.",
        columns=(
            Column("status"),
            Column("ledgers", "count"),
            Column("bytes", "bytes"),
            Column("sized", "count"),
        ),
        rows=tuple(
            (status, n, size if sized else None, sized)
            for status, (n, size, sized) in totals.items()
        ),
    )


def reclaimable_section(summary: Sequence[Row]) -> Section:
    per_namespace: dict[str, list[int]] = {}
    for r in summary:
        if r["status"] == ORPHAN:
            found = per_namespace.setdefault(r["namespace"] or "-", [0, 0])
            found[0] += int(r["bytes"] or 0)
            found[1] += int(r["ledgers"] or 0)
    ranked = sorted(per_namespace.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
    shown = [(namespace, size) for namespace, (size, _) in ranked[:CHART_NAMESPACES]]
    rest = ranked[CHART_NAMESPACES:]
    if rest:
        shown.append((f"{len(rest):,} more namespaces", sum(size for _, (size, _) in rest)))
    return Section(
        key="reclaimable",
        title="Bytes reclaimable per namespace",
        explanation="The known bytes of each namespace's orphans (closed ledgers), the most"
        " first: what deleting them frees in BookKeeper.",
        columns=(Column("namespace"), Column("orphans", "count"), Column("bytes", "bytes")),
        rows=tuple((ns, n, size) for ns, (size, n) in ranked[:CHART_NAMESPACES]),
        total=len(ranked),
        empty="No orphan of known size.",
        chart=bar_chart("Bytes reclaimable per namespace", shown, human_bytes),
    )
