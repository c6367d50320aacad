"""The audit's arithmetic, as pure DataFrame-in, DataFrame-out functions.

Inputs have the shapes of `schema.INVENTORY_SCHEMA` and `schema.REFERENCE_SCHEMA`; time is
a parameter (`now_ms`), never read from a clock here.
"""

from __future__ import annotations

from collections.abc import Collection

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from audit.attribution import attribute
from audit.schema import ORPHAN, YOUNG

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


def old(now_ms: int, min_age_ms: int) -> Column:
    """Created at least `min_age_ms` before `now_ms`; false when the creation time is unknown."""
    if min_age_ms < 0:
        raise ValueError(f"min_age_ms must not be negative: {min_age_ms}")
    return sf.coalesce(sf.col("ctime_ms") <= sf.lit(now_ms - min_age_ms), sf.lit(False))


def expected() -> Column:
    """A reference wants its ledger in BookKeeper (offloaded and deleted from it: absent)."""
    return ~sf.coalesce(sf.col("bookkeeper_deleted"), sf.lit(False))


def status(is_old: Column) -> Column:
    """An attributed ledger's status (schema.STATUSES)."""
    return (
        sf.when(~is_old, sf.lit(YOUNG))
        .when(sf.col("kind").isNull(), sf.lit(ORPHAN))
        .otherwise(sf.col("kind"))
    )


def unreferenced(inventory: DataFrame, references: DataFrame) -> DataFrame:
    """Ledgers that exist and that no metadata references: the anti-join."""
    return inventory.join(references.select("ledger_id"), on="ledger_id", how="left_anti")


def classify(
    inventory: DataFrame,
    references: DataFrame,
    now_ms: int,
    min_age_ms: int,
    stale_compacted: Collection[int] = (),
) -> DataFrame:
    """Every unreferenced ledger with its `status` (schema.STATUSES) and the `reason`.

    A ledger is an ORPHAN only when it is unreferenced, its creation time is known and at
    least `min_age_ms` before `now_ms`, and its custom metadata attributes it to a topic and
    a deletable component. A ledger of unknown age is YOUNG: it is never flagged.
    """
    is_old = old(now_ms, min_age_ms)
    young_reason = sf.when(sf.col("ctime_ms").isNull(), sf.lit("creation time unknown")).otherwise(
        sf.lit("created within the grace period")
    )
    attributed = attribute(unreferenced(inventory, references), stale_compacted)
    return attributed.select(
        "ledger_id",
        status(is_old).alias("status"),
        sf.when(~is_old, young_reason).otherwise(sf.col("reason")).alias("reason"),
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
    missing = references.where(expected()).join(ids, on="ledger_id", how="left_anti")
    return missing.select("ledger_id", "topic", "namespace", "component").distinct()


def dangling_among(references: DataFrame, ledger_ids: list[int]) -> DataFrame:
    """`dangling`'s rows for ledgers already known to be missing (`tally`'s candidates, looked
    up again): a filter, not a second anti-join; an empty list plans no scan at all."""
    missing = references.where(expected() & sf.col("ledger_id").isin(ledger_ids))
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
