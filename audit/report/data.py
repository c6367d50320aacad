"""The HTML report's content, gathered from the audit's Spark results in this one place.

A new finding becomes one more `Section` appended in `build_report_data`; the renderer
(`audit.report.page`) does not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row

from audit.offload.tiered import TieredAudit
from audit.report.orphans import (
    largest_orphans_section,
    oldest_orphans_section,
    orphan_ages_section,
)
from audit.report.page import Column, Figure, ReportData, Section, write_html
from audit.report.summary import reclaimable_section, summary_section, totals_section
from audit.schema import FOREIGN, MISSING_OFFLOADED, ORPHAN, UNATTRIBUTABLE, UNKNOWN, YOUNG

DANGLING_LISTED = 500  # an alarm: list them all, short of a disaster

# The headline, in order: (figures key, label, the section listing it, an alarm when not zero).
_HEADLINE: tuple[tuple[str, str, str | None, bool], ...] = (
    ("ledgers", "ledgers", None, False),
    ("referenced", "referenced", None, False),
    ("orphans", "orphans", "oldest-orphans", False),
    ("dangling", "dangling references", "dangling", True),
    (UNATTRIBUTABLE, "unattributable", "summary", False),
    (FOREIGN, "foreign", "summary", False),
    (YOUNG, "young", "summary", False),
    (UNKNOWN, "unknown", "summary", False),
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
        totals_section(summary),
        reclaimable_section(summary),
        orphan_ages_section(classified, int(figures["min_age_ms"])),
        summary_section(summary),
        largest_orphans_section(classified, summary),
        oldest_orphans_section(classified, orphans),
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
