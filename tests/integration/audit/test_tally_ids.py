"""The tally's two ways (id words, anti-joins) against a ground truth kept here in plain
Python sets, on ids that test the words' arithmetic: negative ones, both ends of a long,
word edges, duplicates, and references that are not expected in BookKeeper."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from audit.schema import INVENTORY_SCHEMA, REFERENCE_SCHEMA
from audit.tally import DANGLING, REFERENCED, referenced_words, tally

NOW = 1_700_000_000_000
EDGES = [0, 1, 62, 63, 64, 65, 127, 128, -1, -63, -64, -65, 2**63 - 1, -(2**63), 2**62]
ids = st.one_of(st.sampled_from(EDGES), st.integers(-300, 300), st.integers(-(2**63), 2**63 - 1))


def _truth(inventory: list[int], references: list[tuple[int, bool]]) -> dict[str, Any]:
    present, named = set(inventory), {ledger_id for ledger_id, _ in references}
    wanted = {ledger_id for ledger_id, deleted in references if not deleted}
    return {
        "unreferenced_rows": sum(1 for ledger_id in inventory if ledger_id not in named),
        "referenced": len(named),
        "dangling": sorted(wanted - present),
    }


def _tallied(spark: SparkSession, inventory: list[int], references: list[tuple[int, bool]],
             dense_ids: bool) -> dict[str, Any]:  # fmt: skip
    inventory_frame = spark.createDataFrame(
        [(i, NOW - 10**9, None, None) for i in inventory], INVENTORY_SCHEMA
    )
    reference_frame = spark.createDataFrame(
        [(i, None, None, None, deleted) for i, deleted in references], REFERENCE_SCHEMA
    )
    words = referenced_words(reference_frame) if dense_ids else None
    rows = tally(inventory_frame, reference_frame, NOW, 0, words).collect()
    by_status = {row["status"]: row for row in rows}
    return {
        "unreferenced_rows": sum(
            row["ledgers"] for row in rows if row["status"] not in (REFERENCED, DANGLING)
        ),
        "referenced": by_status[REFERENCED]["ledgers"] if REFERENCED in by_status else 0,
        "dangling": sorted(by_status[DANGLING]["dangling_ids"]) if DANGLING in by_status else [],
    }


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    inventory=st.lists(ids, max_size=40),
    references=st.lists(st.tuples(ids, st.booleans()), max_size=40),
)
def test_both_ways_agree_with_plain_sets(
    spark: SparkSession, inventory: list[int], references: list[tuple[int, bool]]
) -> None:
    truth = _truth(inventory, references)
    assert _tallied(spark, inventory, references, dense_ids=True) == truth
    assert _tallied(spark, inventory, references, dense_ids=False) == truth


@pytest.mark.parametrize("dense_ids", [True, False], ids=["id words", "anti-joins"])
def test_every_edge_at_once(spark: SparkSession, dense_ids: bool) -> None:
    inventory = [*EDGES[::2], *EDGES[::2]]  # every other edge, each twice
    references = [(ledger_id, ledger_id % 3 == 0) for ledger_id in EDGES]
    assert _tallied(spark, inventory, references, dense_ids) == _truth(inventory, references)
