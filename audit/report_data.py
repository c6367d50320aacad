"""The HTML report's content, gathered from the audit's Spark results in this one place.

A new finding becomes one more `Section` appended in `build_report_data`; the renderer
(`audit.html_report`) does not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as sf

from audit import transform
from audit.html_report import Column, Figure, ReportData, Section, write_html
from audit.offload_audit import TieredAudit
from audit.schema import FOREIGN, MISSING_OFFLOADED, ORPHAN, STATUSES, UNATTRIBUTABLE, YOUNG
from audit.svg_chart import bar_chart
from audit.units import human_bytes, human_duration

OLDEST_ORPHANS = 20
LARGEST_ORPHANS = 20
SUMMARY_ROWS = 40  # the summary table's rows; the Parquet summary holds them all
CHART_NAMESPACES = 15  # bars in the bytes-per-namespace chart; the rest are summed in one
DANGLING_LISTED = 500  # an alarm: list them all, short of a disaster
DAY_MS = 86_400_000
# The orphans-by-age histogram's bucket edges, in days (the first bucket starts at the grace).
AGE_EDGES_DAYS = (7, 30, 90, 365)

# The headline, in order: (figures key, label, the section listing it, an alarm when not zero).
_HEADLINE: tuple[tuple[str, str, str | None, bool], ...] = (
    ("ledgers", "ledgers", None, False),
    ("referenced", "referenced", None, False),
    ("orphans", "orphans", "oldest-orphans", False),
    ("dangling", "dangling references", "dangling", True),
    (UNATTRIBUTABLE, "unattributable", "summary", False),
    (FOREIGN, "foreign", "summary", False),
    (YOUNG, "young", "summary", False),
)
# Shown only when tiered storage was audited.
_TIERED_HEADLINE: tuple[tuple[str, str, str | None, bool], ...] = (
    ("offloaded_copies", "offloaded copies", "offloaded", False),
    ("offload_orphans", "offloaded orphans", "offloaded", False),
    ("missing_offloaded", "offloaded copies missing", "missing-offloaded", True),
)
# The dangling figure says it already; the rest are in the offloaded section's table.
_NOT_FIGURES = {"now_ms", "min_age_ms", "missing_bookkeeper", "offload_unattributable"}
_NOT_FIGURES |= {"offload_young"}


def _figures(
    figures: Mapping[str, Any], summary: Sequence[Row], tiered: bool
) -> tuple[Figure, ...]:
    headline = _HEADLINE + (_TIERED_HEADLINE if tiered else ())
    shown = [
        Figure(label, int(figures.get(key, 0)), section=section, alarm=alarm)
        for key, label, section, alarm in headline
    ]
    orphan_bytes = sum(int(r["bytes"] or 0) for r in summary if r["status"] == ORPHAN)
    shown.insert(3, Figure("orphan bytes (known)", orphan_bytes, kind="bytes", section="summary"))
    # Figures other steps add (AuditResult.extra) are shown too, by their key.
    known = {key for key, *_ in _HEADLINE + _TIERED_HEADLINE} | _NOT_FIGURES
    shown += [
        Figure(key.replace("_", " "), value)
        for key, value in figures.items()
        if key not in known and isinstance(value, int) and not isinstance(value, bool)
    ]
    return tuple(shown)


# The summary's columns: (the Row field, its column).
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


def _summary(summary: Sequence[Row]) -> Section:
    fields = [field for field, _ in _SUMMARY_COLUMNS]
    rows = [tuple(r[f] for f in fields) for r in summary if r["status"] != YOUNG]
    rows += _young_per_namespace([r for r in summary if r["status"] == YOUNG])
    rows.sort(key=_by_size)
    return Section(
        key="summary",
        title="Unreferenced ledgers by status, namespace and component",
        explanation="Only orphans are ever enqueued; the others are listed for a person to judge."
        " Each status lists the namespaces holding the most bytes first; young ledgers (inside"
        " the grace period) are summed per namespace, last. Bytes count the ledgers whose size"
        " is known (closed ledgers).",
        columns=tuple(column for _, column in _SUMMARY_COLUMNS),
        rows=tuple(rows[:SUMMARY_ROWS]),
        total=len(rows),
        empty="No unreferenced ledgers.",
    )


def _totals(summary: Sequence[Row]) -> Section:
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


def _reclaimable(summary: Sequence[Row]) -> Section:
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


def age_buckets(min_age_ms: int) -> list[tuple[str, int]]:
    """(label, lower bound in ms) of the orphans-by-age histogram, youngest first."""
    edges = [min_age_ms] + [d * DAY_MS for d in AGE_EDGES_DAYS if d * DAY_MS > min_age_ms]
    labels = [human_duration(edge) for edge in edges]
    pairs = zip(labels[:-1], labels[1:], edges[:-1], strict=True)
    buckets = [(f"{low} to {high}", edge) for low, high, edge in pairs]
    return [*buckets, (f"over {labels[-1]}", edges[-1])]


def _orphan_ages(classified: DataFrame, min_age_ms: int) -> Section:
    buckets = age_buckets(min_age_ms)
    bucket = sf.lit(0)
    for index, (_, low) in enumerate(buckets[1:], start=1):
        bucket = sf.when(sf.col("age_ms") >= low, sf.lit(index)).otherwise(bucket)
    counted = transform.orphans(classified).groupBy(bucket.alias("bucket")).count().collect()
    counts = {int(r["bucket"]): int(r["count"]) for r in counted}
    items = [(label, counts.get(index, 0)) for index, (label, _) in enumerate(buckets)]
    return Section(
        key="orphan-ages",
        title="Orphans by age",
        explanation="How long ago the orphans were created, in buckets from the grace period on.",
        columns=(Column("age"), Column("orphans", "count")),
        rows=tuple(items) if any(n for _, n in items) else (),
        empty="No orphans.",
        chart=bar_chart("Orphans by age", items, "{:,}".format),
    )


def _largest_orphans(classified: DataFrame, summary: Sequence[Row]) -> Section:
    sized = sum(int(r["ledgers_with_size"] or 0) for r in summary if r["status"] == ORPHAN)
    largest = (
        transform.orphans(classified)
        .where(sf.col("size").isNotNull())
        .orderBy(sf.col("size").desc(), sf.col("ledger_id").asc())
        .limit(LARGEST_ORPHANS)
        .collect()
    )
    return Section(
        key="largest-orphans",
        title=f"The {LARGEST_ORPHANS} largest orphans",
        explanation="The orphans of known size that free the most bytes when deleted.",
        columns=(
            Column("ledger id"),
            Column("topic"),
            Column("component"),
            Column("created (UTC)", "time"),
            Column("age", "duration"),
            Column("size", "bytes"),
        ),
        rows=tuple(
            (r["ledger_id"], r["topic"], r["component"], r["ctime_ms"], r["age_ms"], r["size"])
            for r in largest
        ),
        total=sized,
        empty="No orphan of known size.",
    )


def _oldest_orphans(classified: DataFrame, total: int) -> Section:
    oldest = (
        transform.orphans(classified)
        .orderBy(sf.col("ctime_ms").asc(), sf.col("ledger_id").asc())
        .limit(OLDEST_ORPHANS)
        .collect()
    )
    return Section(
        key="oldest-orphans",
        title=f"The {OLDEST_ORPHANS} oldest orphans",
        explanation="Unreferenced, older than the grace period and attributed to a topic by "
        "their own metadata: what --enqueue sends to phase one.",
        columns=(
            Column("ledger id"),
            Column("topic"),
            Column("component"),
            Column("created (UTC)", "time"),
            Column("age", "duration"),
            Column("size", "bytes"),
        ),
        rows=tuple(
            (r["ledger_id"], r["topic"], r["component"], r["ctime_ms"], r["age_ms"], r["size"])
            for r in oldest
        ),
        total=total,
        empty="No orphans.",
    )


def _dangling(dangling: DataFrame) -> Section:
    listed = dangling.orderBy("ledger_id", "topic", "component").limit(DANGLING_LISTED).collect()
    found = len(listed) if len(listed) < DANGLING_LISTED else dangling.count()
    return Section(
        key="dangling",
        title="Missing data: dangling references",
        explanation="Pulsar's metadata references these ledgers, yet BookKeeper has no such "
        "ledger: possible data loss. Never enqueued.",
        columns=(Column("ledger id"), Column("topic"), Column("component")),
        rows=tuple((r["ledger_id"], r["topic"], r["component"]) for r in listed),
        total=found,
        empty="None: every referenced ledger exists.",
        alarm=True,
    )


def _offloaded(tiered: TieredAudit) -> Section:
    where = tiered.storage or (f"skipped: {tiered.skipped}" if tiered.skipped else None)
    return Section(
        key="offloaded",
        title="Unreferenced offloaded copies by status, store and namespace",
        explanation=f"Tiered storage: {where or 'not configured'}. A copy is an orphan when no "
        "ledger's offload context names its UUID, it is older than the grace period and its "
        "own metadata names its topic; only orphans are ever enqueued.",
        columns=(
            Column("status"),
            Column("store"),
            Column("namespace"),
            Column("copies", "count"),
            Column("bytes", "bytes"),
            Column("oldest (UTC)", "time"),
        ),
        rows=tuple(
            (r["status"], r["store"], r["namespace"], r["copies"], r["bytes"], r["oldest_mtime_ms"])
            for r in tiered.summary
        ),
        empty="No unreferenced offloaded copies."
        if tiered.storage
        else "Not audited: no offload storage configured.",
    )


def _missing_offloaded(tiered: TieredAudit) -> Section:
    gone = [r for r in tiered.missing_rows if r["what"] == MISSING_OFFLOADED]
    return Section(
        key="missing-offloaded",
        title="Missing data: offloaded copies gone",
        explanation="Offloads Pulsar's metadata marks complete, whose objects are not in tiered "
        "storage: possible data loss. Never enqueued.",
        columns=(
            Column("ledger id"),
            Column("topic"),
            Column("offload UUID"),
            Column("store"),
            Column("entries", "count"),
            Column("size", "bytes"),
        ),
        rows=tuple(
            (r["ledger_id"], r["topic"], r["offload_uuid"], r["store"], r["entries"], r["size"])
            for r in gone
        ),
        empty="None: every complete offload's objects exist."
        if tiered.storage
        else "Not checked: no offload storage audited.",
        alarm=True,
    )


def build_report_data(
    figures: Mapping[str, Any],
    summary: Sequence[Row],
    classified: DataFrame,
    dangling: DataFrame,
    tiered: TieredAudit | None = None,
) -> ReportData:
    """`figures` as in audit.json (with `now_ms` and `min_age_ms`); `summary` collected from
    `transform.summarize`; `classified` and `dangling` as the pipeline holds them; `tiered`
    the tiered-storage audit, when one ran."""
    orphans = int(figures.get("orphans", 0))
    sections = [
        _totals(summary),
        _reclaimable(summary),
        _orphan_ages(classified, int(figures["min_age_ms"])),
        _summary(summary),
        _largest_orphans(classified, summary),
        _oldest_orphans(classified, orphans),
        _dangling(dangling),
    ]
    if tiered is not None:
        sections += [_offloaded(tiered), _missing_offloaded(tiered)]
    return ReportData(
        now_ms=int(figures["now_ms"]),
        min_age_ms=int(figures["min_age_ms"]),
        figures=_figures(figures, summary, tiered is not None and tiered.storage is not None),
        sections=tuple(sections),
    )


def write_html_report(
    output: Path,
    figures: Mapping[str, Any],
    summary: Sequence[Row],
    classified: DataFrame,
    dangling: DataFrame,
    tiered: TieredAudit | None = None,
) -> Path:
    data = build_report_data(figures, summary, classified, dangling, tiered)
    return write_html(output, data)
