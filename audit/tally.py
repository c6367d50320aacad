"""Every figure of an audit in one job: `summarize(classify(...))`, the distinct ledgers
referenced and the dangling candidates. Pure DataFrame functions (`transform`'s shapes).

Both directions of the comparison are needed: inventory ledgers no reference names (the
summary) and referenced ledgers absent from the inventory (dangling). Two ways, one answer:

- dense ids (the usual case; see `id_words`): both sides become sets of 64-bit words,
  the references' computed and kept by the caller (`referenced_words`), who checks that
  they are few enough to broadcast. They are broadcast beside the inventory's scan, so
  the inventory is never shuffled; dangling ledgers are where the references' words have
  bits the inventory's lack.
- otherwise two anti-joins on `ledger_id`, each shuffling and sorting both sides. One full
  outer join did both directions in one pass but ran 30-50% longer: it sorts both sides
  whole and needs the references grouped per ledger on its other side.

Either way the map of custom metadata never crosses a shuffle: only the `KEY_COLUMNS`
attribution reads do, and the unreferenced ledgers are grouped by them and by age and
attributed once per group, not per ledger.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from audit.attribution import KEY_COLUMNS, attribute_keys, attribution_keys
from audit.id_words import contains, id_words, members, word
from audit.transform import expected, old, status

# Rows of `tally` that are not statuses.
DANGLING: Final = "dangling"  # the dangling candidates
REFERENCED: Final = "referenced"  # the distinct ledgers referenced


def tally(
    inventory: DataFrame,
    references: DataFrame,
    now_ms: int,
    min_age_ms: int,
    words: DataFrame | None = None,
    stale_compacted: Collection[int] = (),
) -> DataFrame:
    """With `words`, the references' `referenced_words`, by id words; else by anti-joins.
    `stale_compacted`: compacted ledgers their broker said no topic reads (audit.compaction).

    Rows: `summarize`'s, each with an empty `dangling_ids`; one of status REFERENCED whose
    `ledgers` counts the distinct ledger ids referenced; and, if there are dangling
    candidates, one of status DANGLING with their `dangling_ids` (as `dangling` finds them;
    a null id is left out). Columns a row does not use are null."""
    is_old = old(now_ms, min_age_ms)
    scanned = inventory.select("ledger_id", "ctime_ms", "size", "custom_metadata")
    if words is not None:
        unreferenced, referenced, dangling = _by_id_words(scanned, inventory, words)
    else:
        unreferenced, referenced, dangling = _by_anti_joins(scanned, inventory, references)
    # The attribution keys are read out of the map only for the unreferenced ledgers.
    keyed = unreferenced.select("ledger_id", "ctime_ms", "size", *attribution_keys(stale_compacted))
    summary = _summary(attribute_keys(_by_keys(keyed, is_old)))
    return (
        summary.unionByName(referenced, allowMissingColumns=True)
        .unionByName(_dangling_row(dangling), allowMissingColumns=True)
        .orderBy("status", sf.col("namespace").asc_nulls_last(), "component")
    )


Parts = tuple[DataFrame, DataFrame, DataFrame]  # unreferenced rows, REFERENCED row, dangling ids


def _by_anti_joins(scanned: DataFrame, inventory: DataFrame, references: DataFrame) -> Parts:
    # Against the references' ids as they are: the grouped ones were estimated small enough
    # to broadcast (5M ids), which ran twice as long.
    unreferenced = scanned.join(references.select("ledger_id"), on="ledger_id", how="left_anti")
    per_ledger = references.groupBy("ledger_id").agg(sf.bool_or(expected()).alias("expected"))
    # Counting `expected` (never null) rather than rows keeps `per_ledger`'s aggregation as
    # it is, so that Spark reuses its shuffle instead of reading the references twice.
    referenced = per_ledger.agg(sf.count("expected").alias("ledgers"))
    absent = per_ledger.where(sf.col("expected")).join(
        inventory.select("ledger_id"), on="ledger_id", how="left_anti"
    )
    return unreferenced, _referenced_row(referenced), absent.select("ledger_id")


def referenced_words(references: DataFrame) -> DataFrame:
    """The references' ids as words (`word`): `named` by any reference, `expected` in
    BookKeeper by one."""
    return id_words(references, named=sf.lit(True), expected=expected())


def _by_id_words(scanned: DataFrame, inventory: DataFrame, referenced_words: DataFrame) -> Parts:
    ids = sf.col("ledger_id")
    present_words = id_words(inventory, present=sf.lit(True))
    named = sf.broadcast(referenced_words.select("word", "named"))
    looked_up = scanned.join(named, word(ids) == sf.col("word"), "left")
    unreferenced = looked_up.where(~contains(sf.col("named"), ids)).drop("word", "named")
    counted = sf.coalesce(sf.sum(sf.bit_count("named")), sf.lit(0))
    referenced = referenced_words.agg(counted.alias("ledgers"))
    compared = referenced_words.join(present_words, "word", "left")
    wanted = sf.col("expected").bitwiseAND(sf.bitwise_not(sf.coalesce("present", sf.lit(0))))
    return unreferenced, _referenced_row(referenced), members(compared, wanted)


def _referenced_row(counted: DataFrame) -> DataFrame:
    return counted.select(sf.lit(REFERENCED).alias("status"), sf.col("ledgers").cast("long"))


def _by_keys(unreferenced: DataFrame, is_old: Column) -> DataFrame:
    """Unreferenced ledgers grouped by age and attribution keys.

    Plain aggregates only: a hash aggregation, however many groups there are.
    """
    return unreferenced.groupBy(is_old.alias("old"), *KEY_COLUMNS).agg(
        sf.count(sf.lit(1)).alias("ledgers"),
        sf.sum("size").alias("bytes"),
        sf.count("size").alias("ledgers_with_size"),
        sf.min("ctime_ms").alias("oldest_ctime_ms"),
    )


def _summary(attributed: DataFrame) -> DataFrame:
    return attributed.groupBy(status(sf.col("old")).alias("status"), "namespace", "component").agg(
        sf.sum("ledgers").alias("ledgers"),
        sf.sum("bytes").alias("bytes"),
        sf.sum("ledgers_with_size").alias("ledgers_with_size"),
        sf.min("oldest_ctime_ms").alias("oldest_ctime_ms"),
        sf.array().cast("array<bigint>").alias("dangling_ids"),
    )


def _dangling_row(absent: DataFrame) -> DataFrame:
    """The DANGLING row of the absent ids; no row when there is none."""
    ids = absent.agg(sf.collect_list("ledger_id").alias("dangling_ids"))
    return ids.where(sf.size("dangling_ids") > 0).select(
        sf.lit(DANGLING).alias("status"), "dangling_ids"
    )
