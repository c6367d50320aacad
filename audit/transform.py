"""The audit's arithmetic, as pure DataFrame-in, DataFrame-out functions.

Inputs have the shapes of `schema.INVENTORY_SCHEMA` and `schema.REFERENCE_SCHEMA`; time is
a parameter (`now_ms`), never read from a clock here.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from audit.attribution import KEY_COLUMNS, attribute, attribute_keys, attribution_keys
from audit.schema import ORPHAN, YOUNG

# Rows of `tally` that are not statuses.
DANGLING: Final = "dangling"  # the dangling candidates
REFERENCED: Final = "referenced"  # the distinct ledgers referenced

CLASSIFIED_COLUMNS = (
    "ledger_id",
    "status",
    "reason",
    "topic",
    "namespace",
    "component",
    "ctime_ms",
    "age_ms",
    "size",
    "custom_metadata",
)


def _old(now_ms: int, min_age_ms: int) -> Column:
    """Created at least `min_age_ms` before `now_ms`; false when the creation time is unknown."""
    if min_age_ms < 0:
        raise ValueError(f"min_age_ms must not be negative: {min_age_ms}")
    return sf.coalesce(sf.col("ctime_ms") <= sf.lit(now_ms - min_age_ms), sf.lit(False))


def _expected() -> Column:
    """A reference wants its ledger in BookKeeper (offloaded and deleted from it: absent)."""
    return ~sf.coalesce(sf.col("bookkeeper_deleted"), sf.lit(False))


def _status(old: Column) -> Column:
    """An attributed ledger's status (schema.STATUSES)."""
    return (
        sf.when(~old, sf.lit(YOUNG))
        .when(sf.col("kind").isNull(), sf.lit(ORPHAN))
        .otherwise(sf.col("kind"))
    )


def unreferenced(inventory: DataFrame, references: DataFrame) -> DataFrame:
    """Ledgers that exist and that no metadata references: the anti-join."""
    return inventory.join(references.select("ledger_id"), on="ledger_id", how="left_anti")


def classify(
    inventory: DataFrame, references: DataFrame, now_ms: int, min_age_ms: int
) -> DataFrame:
    """Every unreferenced ledger with its `status` (schema.STATUSES) and the `reason`.

    A ledger is an ORPHAN only when it is unreferenced, its creation time is known and at
    least `min_age_ms` before `now_ms`, and its custom metadata attributes it to a topic and
    a deletable component. A ledger of unknown age is YOUNG: it is never flagged.
    """
    old = _old(now_ms, min_age_ms)
    young_reason = sf.when(sf.col("ctime_ms").isNull(), sf.lit("creation time unknown")).otherwise(
        sf.lit("created within the grace period")
    )
    attributed = attribute(unreferenced(inventory, references))
    return attributed.select(
        "ledger_id",
        _status(old).alias("status"),
        sf.when(~old, young_reason).otherwise(sf.col("reason")).alias("reason"),
        "topic",
        "namespace",
        "component",
        "ctime_ms",
        (sf.lit(now_ms) - sf.col("ctime_ms")).alias("age_ms"),
        "size",
        "custom_metadata",
    )


def orphans(classified: DataFrame) -> DataFrame:
    """The ledgers to enqueue: old, unreferenced and attributable."""
    return classified.where(sf.col("status") == ORPHAN)


def dangling(references: DataFrame, inventory: DataFrame) -> DataFrame:
    """References to ledgers that do not exist: a data-loss alarm.

    An offloaded ledger deleted from BookKeeper (`bookkeeper_deleted`) is meant to be absent.
    """
    ids = inventory.select("ledger_id")
    missing = references.where(_expected()).join(ids, on="ledger_id", how="left_anti")
    return missing.select("ledger_id", "topic", "namespace", "component").distinct()


def dangling_among(references: DataFrame, ledger_ids: list[int]) -> DataFrame:
    """`dangling`'s rows for ledgers already known to be missing (`tally`'s candidates, looked
    up again): a filter, not a second anti-join; an empty list plans no scan at all."""
    missing = references.where(_expected() & sf.col("ledger_id").isin(ledger_ids))
    return missing.select("ledger_id", "topic", "namespace", "component").distinct()


def summarize(classified: DataFrame) -> DataFrame:
    """Per status, namespace and component: count, bytes where known, oldest creation time."""
    return (
        classified.groupBy("status", "namespace", "component")
        .agg(
            sf.count(sf.lit(1)).alias("ledgers"),
            sf.sum("size").alias("bytes"),
            sf.count("size").alias("ledgers_with_size"),
            sf.min("ctime_ms").alias("oldest_ctime_ms"),
        )
        .orderBy("status", sf.col("namespace").asc_nulls_last(), "component")
    )


def _per_referenced_ledger(references: DataFrame) -> DataFrame:
    """One row per referenced ledger id; `expected` when a reference wants it in BookKeeper."""
    return references.groupBy("ledger_id").agg(sf.bool_or(_expected()).alias("expected"))


def tally(inventory: DataFrame, references: DataFrame, now_ms: int, min_age_ms: int) -> DataFrame:
    """`summarize(classify(...))` and the dangling candidates, in one job.

    Two anti-joins on `ledger_id`: the inventory's unreferenced ledgers, and the referenced
    ledgers absent from the inventory (from the references grouped per ledger, whose
    shuffle the REFERENCED count reuses). One full outer join would find both at once;
    with the grouping it needs, it ran 30-50% longer than the two. The map
    of custom metadata never crosses a shuffle: only the `KEY_COLUMNS` attribution reads
    do. Attribution depends on those alone, so the unreferenced ledgers are first grouped
    by them and by age, and attributed once per group, not per ledger.

    Rows: `summarize`'s, each with an empty `dangling_ids`; one of status REFERENCED whose
    `ledgers` counts the distinct ledger ids referenced; and, if there are dangling
    candidates, one of status DANGLING with their `dangling_ids` (as `dangling` finds
    them; a null id is left out). Columns a row does not use are null.
    """
    per_ledger = _per_referenced_ledger(references)
    old = _old(now_ms, min_age_ms)
    attributed = attribute_keys(_unreferenced_by_keys(inventory, references, old))
    summary = attributed.groupBy(
        _status(sf.col("old")).alias("status"), "namespace", "component"
    ).agg(
        sf.sum("ledgers").alias("ledgers"),
        sf.sum("bytes").alias("bytes"),
        sf.sum("ledgers_with_size").alias("ledgers_with_size"),
        sf.min("oldest_ctime_ms").alias("oldest_ctime_ms"),
        sf.array().cast("array<bigint>").alias("dangling_ids"),
    )
    return (
        summary.unionByName(_referenced(per_ledger), allowMissingColumns=True)
        .unionByName(_dangling_candidates(per_ledger, inventory), allowMissingColumns=True)
        .orderBy("status", sf.col("namespace").asc_nulls_last(), "component")
    )


def _referenced(per_ledger: DataFrame) -> DataFrame:
    # Counting `expected` (never null) rather than rows keeps `per_ledger`'s aggregation as
    # it is, so that Spark reuses its shuffle instead of reading the references twice.
    return per_ledger.agg(sf.count("expected").alias("ledgers")).select(
        sf.lit(REFERENCED).alias("status"), "ledgers"
    )


def _unreferenced_by_keys(inventory: DataFrame, references: DataFrame, old: Column) -> DataFrame:
    """Unreferenced ledgers grouped by age and attribution keys.

    Against the references' ids as they are: an anti-join needs no grouping per ledger, and
    grouped ones were estimated small enough to broadcast (5M ids, twice as slow). Plain
    aggregates only: a hash aggregation, however many groups there are.
    """
    present = inventory.select("ledger_id", "ctime_ms", "size", *attribution_keys())
    unreferenced = present.join(references.select("ledger_id"), on="ledger_id", how="left_anti")
    return unreferenced.groupBy(old.alias("old"), *KEY_COLUMNS).agg(
        sf.count(sf.lit(1)).alias("ledgers"),
        sf.sum("size").alias("bytes"),
        sf.count("size").alias("ledgers_with_size"),
        sf.min("ctime_ms").alias("oldest_ctime_ms"),
    )


def _dangling_candidates(per_ledger: DataFrame, inventory: DataFrame) -> DataFrame:
    """The DANGLING row: referenced ledgers, wanted in BookKeeper, absent from the inventory;
    no row when there is none."""
    absent = per_ledger.where(sf.col("expected")).join(
        inventory.select("ledger_id"), on="ledger_id", how="left_anti"
    )
    ids = absent.agg(sf.collect_list("ledger_id").alias("dangling_ids"))
    return ids.where(sf.size("dangling_ids") > 0).select(
        sf.lit(DANGLING).alias("status"), "dangling_ids"
    )
