"""The tiered-storage audit's arithmetic, as pure DataFrame-in, DataFrame-out functions.

Inputs: offloaded objects (`schema.OFFLOADED_OBJECT_SCHEMA`) and scanned references
(`schema.SCANNED_REFERENCE_SCHEMA`). An offloaded copy is one ledger's objects under one
offload UUID; it is referenced only when some ledger's offload context names that very
(ledger id, UUID). A copy of a referenced ledger under another UUID is the leftover of a
failed or retried offload (apache/pulsar#9962, #16687): Pulsar records a UUID before it writes
under it and never returns to an old one, so nothing will ever read it.
"""

from __future__ import annotations

from collections.abc import Collection

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from audit.schema import (
    MANAGED_LEDGER,
    MISSING_BOOKKEEPER,
    MISSING_OFFLOADED,
    ORPHAN,
    UNATTRIBUTABLE,
    YOUNG,
)

COPY_KEY = ("store", "location", "ledger_id", "uuid")
MISSING_COLUMNS = (
    "what", "ledger_id", "topic", "namespace", "component", "offload_uuid", "store",
    "entries", "size",
)  # fmt: skip


def _has(roles: str, role: str) -> Column:
    return sf.array_contains(sf.col(roles), role)


def copies(objects: DataFrame) -> DataFrame:
    """One row per offloaded copy: its objects, bytes, newest change, and whose it is."""
    grouped = objects.groupBy(*COPY_KEY).agg(
        sf.collect_set("role").alias("roles"),
        sf.count(sf.lit(1)).alias("objects"),
        sf.sum("bytes").alias("bytes"),
        sf.max("mtime_ms").alias("mtime_ms"),
        sf.min(sf.col("key")).alias("key"),
        sf.bool_and("complete").alias("files_complete"),
        sf.collect_set("managed_ledger").alias("names"),
        sf.collect_set("topic").alias("topics"),
        sf.collect_set("namespace").alias("namespaces"),
        sf.collect_set("problem").alias("problems"),
        sf.collect_set("silence").alias("silences"),
    )
    attributed = (sf.size("problems") == 0) & (sf.size("names") == 1) & (sf.size("topics") == 1)
    complete = (_has("roles", "data") & _has("roles", "index")) | (
        _has("roles", "mapfile") & sf.col("files_complete")
    )
    reason = (
        sf.when(sf.size("problems") > 0, sf.concat_ws("; ", sf.array_sort("problems")))
        .when(sf.size("names") > 1, sf.lit("its objects name different managed ledgers"))
        .otherwise(sf.concat_ws("; ", sf.array_sort("silences")))
    )
    return grouped.select(
        *COPY_KEY, "key", "roles", "objects", "bytes", "mtime_ms", complete.alias("complete"),
        sf.when(attributed, sf.col("names")[0]).alias("managed_ledger"),
        sf.when(attributed, sf.col("topics")[0]).alias("topic"),
        sf.when(attributed, sf.col("namespaces")[0]).alias("namespace"),
        sf.when(~attributed, reason).alias("unattributed_reason"),
    )  # fmt: skip


def referenced_offloads(references: DataFrame) -> DataFrame:
    """(ledger_id, uuid) of every offload a ledger's metadata names, complete or not."""
    named = references.where(sf.col("offload_uuid").isNotNull())
    return named.select("ledger_id", sf.col("offload_uuid").alias("uuid")).distinct()


def classify_copies(
    offloaded: DataFrame, references: DataFrame, now_ms: int, min_age_ms: int
) -> DataFrame:
    """Every unreferenced copy with its `status` (ORPHAN, UNATTRIBUTABLE, YOUNG) and `reason`.

    An ORPHAN is unreferenced, last modified at least `min_age_ms` before `now_ms`, and
    attributed to a topic by its own metadata; an unknown age is YOUNG.
    """
    if min_age_ms < 0:
        raise ValueError(f"min_age_ms must not be negative: {min_age_ms}")
    unreferenced = offloaded.join(
        referenced_offloads(references), on=["ledger_id", "uuid"], how="left_anti"
    )
    ledgers = references.select("ledger_id").distinct()
    ledgers = ledgers.withColumn("ledger_referenced", sf.lit(True))
    joined = unreferenced.join(ledgers, on="ledger_id", how="left")
    old = sf.coalesce(sf.col("mtime_ms") <= sf.lit(now_ms - min_age_ms), sf.lit(False))
    status = (
        sf.when(~old, sf.lit(YOUNG))
        .when(sf.col("managed_ledger").isNull(), sf.lit(UNATTRIBUTABLE))
        .otherwise(sf.lit(ORPHAN))
    )
    reason = (
        sf.when(sf.col("mtime_ms").isNull(), sf.lit("modification time unknown"))
        .when(~old, sf.lit("written within the grace period"))
        .when(sf.col("managed_ledger").isNull(), sf.col("unattributed_reason"))
        .when(
            sf.col("ledger_referenced").isNotNull(),
            sf.lit("the ledger's metadata names another offload (a failed or retried one)"),
        )
        .otherwise(sf.lit("no metadata references the ledger"))
    )
    return joined.select(
        *COPY_KEY, status.alias("status"), reason.alias("reason"), "topic", "namespace",
        "managed_ledger", "key", "objects", "bytes", "mtime_ms",
        (sf.lit(now_ms) - sf.col("mtime_ms")).alias("age_ms"),
    )  # fmt: skip


def missing_offloaded(
    references: DataFrame,
    offloaded: DataFrame,
    *,
    s3_bucket: str | None,
    s3_drivers: Collection[str],
    filesystem: bool,
    default_driver: str | None,
) -> DataFrame:
    """Offloads marked complete whose objects are not all in the store that was listed.

    Only contexts whose objects live where the audit looked are judged: an S3 driver and the
    listed bucket (a context naming no bucket means the configured one), or the filesystem.
    """
    driver = sf.lower(sf.coalesce(sf.col("offload_driver"), sf.lit(default_driver or "")))
    in_s3 = sf.lit(False)
    if s3_bucket is not None:
        bucket = sf.coalesce(sf.col("offload_bucket"), sf.lit(s3_bucket))
        in_s3 = driver.isin(*sorted(s3_drivers)) & (bucket == sf.lit(s3_bucket))
    in_fs = (driver == sf.lit("filesystem")) & sf.lit(filesystem)
    judged = references.where(
        sf.coalesce(sf.col("offload_complete"), sf.lit(False))
        & sf.col("offload_uuid").isNotNull()
        & (in_s3 | in_fs)
    ).withColumn("store", sf.when(in_s3, sf.lit("s3")).otherwise(sf.lit("filesystem")))
    present = offloaded.where("complete").select(
        "store", "ledger_id", sf.col("uuid").alias("offload_uuid")
    )
    gone = judged.join(present, on=["store", "ledger_id", "offload_uuid"], how="left_anti")
    return gone.select(sf.lit(MISSING_OFFLOADED).alias("what"), *MISSING_COLUMNS[1:]).distinct()


def missing_bookkeeper(dangling: DataFrame, references: DataFrame) -> DataFrame:
    """The dangling references with what the managed ledger recorded of them, when known."""
    if "entries" not in references.columns:
        known = dangling.withColumn("entries", sf.lit(None).cast("long"))
        known = known.withColumn("size", sf.lit(None).cast("long"))
    else:
        # Dangling references are few: only theirs are grouped, not every reference.
        few = sf.broadcast(dangling.select("ledger_id").distinct())
        recorded = (
            references.join(few, on="ledger_id", how="left_semi")
            .where(sf.col("component") == MANAGED_LEDGER)
            .groupBy("ledger_id", "topic")
            .agg(sf.max("entries").alias("entries"), sf.max("size").alias("size"))
        )
        known = dangling.join(recorded, on=["ledger_id", "topic"], how="left")
    nothing = sf.lit(None).cast("string")
    return known.select(
        sf.lit(MISSING_BOOKKEEPER).alias("what"), "ledger_id", "topic", "namespace", "component",
        nothing.alias("offload_uuid"), nothing.alias("store"), "entries", "size",
    )  # fmt: skip
