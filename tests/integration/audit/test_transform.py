"""The pure transformations on small DataFrames, nulls included."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from audit import tally, transform
from audit.pipeline import status_counts
from audit.schema import INVENTORY_SCHEMA, REFERENCE_SCHEMA
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName

HOUR = 3_600_000
NOW = 1_700_000_000_000
MIN_AGE = 24 * HOUR
OLD = NOW - 48 * HOUR
NS = NamespaceName("acme", "orders")


def meta(topic: TopicName, component: LedgerComponent, cursor: str = "sub") -> dict[str, str]:
    raw = pulsar_custom_metadata(topic, component, cursor)
    return {key: value.decode() for key, value in raw.items()}


def ml(name: str) -> dict[str, str]:
    return {"application": "pulsar", "component": "managed-ledger", "pulsar/managed-ledger": name}


ORDERS = TopicName(NS, "orders-partition-1")
EVENTS = TopicName(NS, "events v2:raw")

INVENTORY: list[tuple[int, int | None, dict[str, str] | None, int | None]] = [
    (1, OLD, meta(ORDERS, LedgerComponent.MANAGED_LEDGER), 100),  # referenced
    (2, OLD, meta(ORDERS, LedgerComponent.MANAGED_LEDGER), 200),
    (3, OLD, meta(ORDERS, LedgerComponent.MANAGED_CURSOR), None),
    (4, OLD, meta(EVENTS, LedgerComponent.SCHEMA_STORAGE), 50),
    (5, NOW - HOUR, meta(ORDERS, LedgerComponent.MANAGED_LEDGER), 10),  # young
    (6, None, meta(ORDERS, LedgerComponent.MANAGED_LEDGER), None),  # age unknown
    (7, OLD, None, None),  # metadata unreadable
    (8, OLD, {}, 5),  # foreign: no metadata at all
    (9, OLD, {"application": "flink"}, 7),  # foreign
    (10, OLD, {"application": "pulsar", "component": "compactor"}, None),
    (11, OLD, ml("acme/orders/persistent/a b"), None),  # not encoded as Pulsar does
    (12, OLD, ml("acme/cluster/orders/persistent/t"), None),  # a v1 name
    (
        13,
        OLD,
        {
            **meta(EVENTS, LedgerComponent.SCHEMA_STORAGE),
            "pulsar/schemaId": "acme/orders/x-partition-0",
        },
        None,
    ),
    (14, NOW - MIN_AGE, meta(ORDERS, LedgerComponent.MANAGED_LEDGER), None),  # exactly due
    (15, OLD, {"application": "pulsar", "component": "managed-ledger"}, None),
    (16, OLD, ml("../orders/persistent/t"), None),
]
REFERENCES: list[tuple[int, str | None, str | None, str | None, bool]] = [
    (1, str(ORDERS), str(NS), "MANAGED_LEDGER", False),
    (1, str(ORDERS), str(NS), "COMPACTED", False),
    (99, str(ORDERS), str(NS), "MANAGED_LEDGER", False),  # dangling
    (100, str(ORDERS), str(NS), "MANAGED_LEDGER", True),  # offloaded, deleted from BookKeeper
    (101, None, None, None, False),  # dangling, from a file without topics
]


@pytest.fixture(scope="module")
def frames(spark: SparkSession) -> tuple[DataFrame, DataFrame]:
    return (
        spark.createDataFrame(INVENTORY, INVENTORY_SCHEMA),
        spark.createDataFrame(REFERENCES, REFERENCE_SCHEMA),
    )


@pytest.fixture(scope="module")
def classified(frames: tuple[DataFrame, DataFrame]) -> dict[int, dict[str, Any]]:
    inventory, references = frames
    rows = transform.classify(inventory, references, NOW, MIN_AGE).collect()
    return {row["ledger_id"]: row.asDict() for row in rows}


def test_referenced_ledgers_are_not_listed(classified: dict[int, dict[str, Any]]) -> None:
    assert 1 not in classified
    assert set(classified) == set(range(2, 17))


def test_old_attributable_ledgers_are_orphans_of_their_topic(
    classified: dict[int, dict[str, Any]],
) -> None:
    orphans = {i: r for i, r in classified.items() if r["status"] == "orphan"}
    assert set(orphans) == {2, 3, 4, 14}
    assert orphans[2]["topic"] == "acme/orders/orders-partition-1"
    assert orphans[2]["component"] == "MANAGED_LEDGER"
    assert orphans[3]["component"] == "MANAGED_CURSOR"
    assert (orphans[4]["topic"], orphans[4]["component"]) == (str(EVENTS), "SCHEMA_STORAGE")
    assert {r["namespace"] for r in orphans.values()} == {"acme/orders"}
    assert orphans[2]["age_ms"] == 48 * HOUR and orphans[14]["age_ms"] == MIN_AGE
    assert all(r["reason"] is None for r in orphans.values())


def test_young_and_ageless_ledgers_are_never_orphans(
    classified: dict[int, dict[str, Any]],
) -> None:
    assert classified[5]["status"] == classified[6]["status"] == "young"
    assert classified[5]["reason"] == "created within the grace period"
    assert classified[6]["reason"] == "creation time unknown"
    assert classified[6]["age_ms"] is None


@pytest.mark.parametrize(
    ("ledger_id", "status", "reason"),
    [
        (7, "unattributable", "custom metadata unreadable"),
        (8, "foreign", "no application=pulsar"),
        (9, "foreign", "no application=pulsar"),
        (10, "unattributable", "component compactor is not deletable by the protocol"),
        (11, "unattributable", "topic name not encoded as Pulsar does"),
        (12, "unattributable", "malformed topic name"),
        (13, "unattributable", "schema id names a partition"),
        (15, "unattributable", "no pulsar/managed-ledger"),
        (16, "unattributable", "topic name not encoded as Pulsar does"),
    ],
)
def test_what_cannot_be_attributed_is_listed_apart_with_the_reason(
    classified: dict[int, dict[str, Any]], ledger_id: int, status: str, reason: str
) -> None:
    row = classified[ledger_id]
    assert (row["status"], row["reason"]) == (status, reason)
    assert row["topic"] is row["namespace"] is row["component"] is None


def test_dangling_references_skip_ledgers_offloaded_and_deleted_from_bookkeeper(
    frames: tuple[DataFrame, DataFrame],
) -> None:
    inventory, references = frames
    rows = transform.dangling(references, inventory).collect()
    assert sorted(row["ledger_id"] for row in rows) == [99, 101]


def test_summary_counts_bytes_where_known_and_the_oldest(
    frames: tuple[DataFrame, DataFrame],
) -> None:
    inventory, references = frames
    classified = transform.classify(inventory, references, NOW, MIN_AGE)
    summary = transform.summarize(classified).collect()
    rows = {(r["status"], r["namespace"], r["component"]): r for r in summary}
    ledgers = rows[("orphan", "acme/orders", "MANAGED_LEDGER")]
    assert (ledgers["ledgers"], ledgers["bytes"], ledgers["ledgers_with_size"]) == (2, 200, 1)
    assert ledgers["oldest_ctime_ms"] == OLD
    cursor = rows[("orphan", "acme/orders", "MANAGED_CURSOR")]
    assert (cursor["ledgers"], cursor["bytes"]) == (1, None)
    assert rows[("foreign", None, None)]["bytes"] == 12
    assert status_counts(summary) == {
        "orphan": 4,
        "young": 2,
        "foreign": 2,
        "unattributable": 7,
    }


def test_a_negative_grace_period_is_refused(frames: tuple[DataFrame, DataFrame]) -> None:
    with pytest.raises(ValueError, match="negative"):
        transform.classify(*frames, now_ms=NOW, min_age_ms=-1)


def test_empty_inputs(spark: SparkSession) -> None:
    empty_inventory = spark.createDataFrame([], INVENTORY_SCHEMA)
    empty_references = spark.createDataFrame([], REFERENCE_SCHEMA)
    assert transform.classify(empty_inventory, empty_references, NOW, 0).count() == 0
    assert transform.dangling(empty_references, empty_inventory).count() == 0


@pytest.mark.parametrize("dense_ids", [False, True], ids=["anti-joins", "id words"])
def test_the_one_job_tally_gives_the_summary_the_referenced_and_the_dangling(
    frames: tuple[DataFrame, DataFrame], dense_ids: bool
) -> None:
    inventory, references = frames
    classified = transform.classify(inventory, references, NOW, MIN_AGE)
    words = tally.referenced_words(references) if dense_ids else None
    frame = tally.tally(inventory, references, NOW, MIN_AGE, words)
    rows = [r.asDict() for r in frame.collect()]
    by_status = {r["status"]: r for r in rows}
    assert by_status[tally.REFERENCED]["ledgers"] == 4  # 1, 99, 100 and 101
    assert sorted(by_status[tally.DANGLING]["dangling_ids"]) == [99, 101]
    summary = [
        {k: v for k, v in r.items() if k != "dangling_ids"}
        for r in rows
        if r["status"] not in (tally.REFERENCED, tally.DANGLING)
    ]
    assert summary == [r.asDict() for r in transform.summarize(classified).collect()]


@pytest.mark.parametrize("dense_ids", [False, True], ids=["anti-joins", "id words"])
def test_the_tally_counts_a_ledger_listed_twice_once_as_referenced(
    spark: SparkSession, dense_ids: bool
) -> None:
    twice = [INVENTORY[0], INVENTORY[0], INVENTORY[1]]
    inventory = spark.createDataFrame(twice, INVENTORY_SCHEMA)
    references = spark.createDataFrame(REFERENCES[:2], REFERENCE_SCHEMA)  # ledger 1, twice
    words = tally.referenced_words(references) if dense_ids else None
    frame = tally.tally(inventory, references, NOW, MIN_AGE, words)
    rows = {r["status"]: r for r in frame.collect()}
    assert rows[tally.REFERENCED]["ledgers"] == 1
    assert rows["orphan"]["ledgers"] == 1 and tally.DANGLING not in rows
