"""The HTML report's sections listing orphans, each one Spark job over the classified
ledgers: orphans by age (a chart), the largest and the oldest orphans."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as sf

from audit import transform
from audit.report.chart import bar_chart
from audit.report.page import Cell, Column, Section
from audit.schema import ORPHAN
from audit.units import human_duration

OLDEST_ORPHANS = 20
LARGEST_ORPHANS = 20
DAY_MS = 86_400_000
# The orphans-by-age histogram's bucket edges, in days (the first bucket starts at the grace).
AGE_EDGES_DAYS = (7, 30, 90, 365)


# One orphan a row: the columns of the largest and the oldest orphans' lists.
ORPHAN_COLUMNS = (
    Column("ledger id"),
    Column("topic"),
    Column("component"),
    Column("created (UTC)", "time"),
    Column("age", "duration"),
    Column("size", "bytes"),
)


def orphan_rows(rows: list[Row]) -> tuple[tuple[Cell, ...], ...]:
    return tuple(
        (r["ledger_id"], r["topic"], r["component"], r["ctime_ms"], r["age_ms"], r["size"])
        for r in rows
    )


def age_buckets(min_age_ms: int) -> list[tuple[str, int]]:
    """(label, lower bound in ms) of the orphans-by-age histogram, youngest first."""
    edges = [min_age_ms] + [d * DAY_MS for d in AGE_EDGES_DAYS if d * DAY_MS > min_age_ms]
    labels = [human_duration(edge) for edge in edges]
    pairs = zip(labels[:-1], labels[1:], edges[:-1], strict=True)
    buckets = [(f"{low} to {high}", edge) for low, high, edge in pairs]
    return [*buckets, (f"over {labels[-1]}", edges[-1])]


def orphan_ages_section(classified: DataFrame, min_age_ms: int) -> Section:
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


def largest_orphans_section(classified: DataFrame, summary: Sequence[Row]) -> Section:
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
        columns=ORPHAN_COLUMNS,
        rows=orphan_rows(largest),
        total=sized,
        empty="No orphan of known size.",
    )


def oldest_orphans_section(classified: DataFrame, total: int) -> Section:
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
        columns=ORPHAN_COLUMNS,
        rows=orphan_rows(oldest),
        total=total,
        empty="No orphans.",
    )
