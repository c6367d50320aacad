"""Sets of ledger ids as 64-bit words: exact, and small when the ids are dense.

BookKeeper hands out ledger ids from a counter (LongHierarchicalLedgerIdGenerator), so a
cluster's live ids fill most of a range. A set of them is kept as one row per 64 ids:
`word` (the id shifted right by 6, arithmetically, so that negative ids work too) and a
mask with bit `id & 63` set for each member. 10M dense ids are 156k rows: small enough to
broadcast, so that "is this ledger referenced?" is a hash look-up beside the scan instead
of a shuffle and a sort of both sides. The aggregation that builds a set collapses its
input before any shuffle (`bit_or` is a plain aggregate), and comparing two sets is a join
of two such small tables. Pure DataFrame functions; whether the ids are dense enough is
the caller's decision (`pipeline`: it counts the words, kept for the tally).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

BITS: Final = 64
MAX_BROADCAST_WORDS: Final = 2_000_000  # 32 MB of words: past it, the shuffled anti-joins


def word(ids: Column) -> Column:
    return sf.shiftright(ids, 6)


def bit(ids: Column) -> Column:
    """The id's bit as a one-bit mask (bit 63 is the sign bit: still one bit)."""
    # call_function: PySpark's shiftleft takes a constant shift only
    return sf.call_function("shiftleft", sf.lit(1).cast("long"), ids.bitwiseAND(BITS - 1))


def id_words(frame: DataFrame, **masks: Column) -> DataFrame:
    """`frame`'s `ledger_id`s as words, one mask column per keyword: the ids of the rows where
    its condition holds (null ids left out)."""
    ids = sf.col("ledger_id")
    return (
        frame.where(ids.isNotNull())
        .groupBy(word(ids).alias("word"))
        .agg(
            *(
                sf.bit_or(sf.when(condition, bit(ids)).otherwise(sf.lit(0).cast("long"))).alias(
                    name
                )
                for name, condition in masks.items()
            )
        )
    )


def contains(mask: Column, ids: Column) -> Column:
    """Whether the id's bit is set in its word's mask (false for no word: null mask)."""
    return sf.coalesce(sf.getbit(mask, ids.bitwiseAND(BITS - 1)) == 1, sf.lit(False))


def members(words: DataFrame, mask: Column) -> DataFrame:
    """The ids whose bits are set in `mask`, one row each (`ledger_id`): for few words."""
    bits = sf.explode(sf.sequence(sf.lit(0), sf.lit(BITS - 1))).alias("bit")
    return (
        words.where(mask != 0)
        .select("word", mask.alias("mask"), bits)
        .where(sf.getbit("mask", "bit") == 1)
        .select((sf.shiftleft("word", 6) + sf.col("bit")).alias("ledger_id"))
    )
