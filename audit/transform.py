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
    """`summarize(classify(...))` and the dangling candidates, in one pass over both inputs.

    One full outer join on `ledger_id` finds the unreferenced ledgers and the dangling
    references at once. The map of custom metadata never crosses the shuffle: only the
    `KEY_COLUMNS` attribution reads do. Attribution depends on those alone, so the ledgers
    are first grouped by them and by age, and attributed once per group, not per ledger.

    Rows: `summarize`'s, each with an empty `dangling_ids`; one of status REFERENCED whose
    `ledgers` counts the distinct ledger ids referenced (from the shuffle the join reads
    too); and, if there are dangling candidates, one of status DANGLING with their
    `dangling_ids` (as `dangling` finds them; a null id is left out). Columns a row does
    not use are null.
    """
    per_ledger = _per_referenced_ledger(references)
    old = _old(now_ms, min_age_ms)
    groups = _by_attribution_keys(_outer_join(inventory, per_ledger), old)
    attributed = attribute_keys(groups)
    named = sf.col("dangling").isNull()
    status = sf.when(named, _status(sf.col("old"))).otherwise(sf.lit(DANGLING))
    return (
        attributed.groupBy(
            status.alias("status"),
            sf.when(named, sf.col("namespace")).alias("namespace"),
            sf.when(named, sf.col("component")).alias("component"),
        )
        .agg(
            sf.sum("ledgers").alias("ledgers"),
            sf.sum("bytes").alias("bytes"),
            sf.sum("ledgers_with_size").alias("ledgers_with_size"),
            sf.min("oldest_ctime_ms").alias("oldest_ctime_ms"),
            sf.collect_list("dangling_id").alias("dangling_ids"),
        )
        .unionByName(_referenced(per_ledger), allowMissingColumns=True)
        .orderBy("status", sf.col("namespace").asc_nulls_last(), "component")
    )


def _referenced(per_ledger: DataFrame) -> DataFrame:
    # Counting `expected` (never null) rather than rows keeps `per_ledger`'s aggregation as
    # it is, so that Spark reuses its shuffle instead of reading the references twice.
    return per_ledger.agg(sf.count("expected").alias("ledgers")).select(
        sf.lit(REFERENCED).alias("status"), "ledgers"
    )


def _outer_join(inventory: DataFrame, per_ledger: DataFrame) -> DataFrame:
    """The unreferenced ledgers (`expected` null) and the dangling references (`present`
    null), with the inventory's columns the tally needs: no map crosses the shuffle."""
    present = inventory.select(
        "ledger_id", "ctime_ms", "size", *attribution_keys(), sf.lit(True).alias("present")
    )
    joined = present.join(per_ledger, on="ledger_id", how="full_outer")
    unreferenced = sf.col("present") & sf.col("expected").isNull()
    dangling = sf.col("present").isNull() & sf.col("expected")
    return joined.where(unreferenced | dangling)


def _by_attribution_keys(joined: DataFrame, old: Column) -> DataFrame:
    """Unreferenced ledgers grouped by age and attribution keys; each dangling id on its own.

    Plain aggregates only: a hash aggregation, however many groups there are.
    """
    dangling_id = sf.when(sf.col("present").isNull(), sf.col("ledger_id"))
    return joined.groupBy(
        sf.when(sf.col("present").isNull(), sf.lit(True)).alias("dangling"),
        dangling_id.alias("dangling_id"),
        old.alias("old"),
        *KEY_COLUMNS,
    ).agg(
        sf.count(sf.lit(1)).alias("ledgers"),
        sf.sum("size").alias("bytes"),
        sf.count("size").alias("ledgers_with_size"),
        sf.min("ctime_ms").alias("oldest_ctime_ms"),
    )
