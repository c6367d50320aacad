"""Spark's attribution agrees with the worker's ownership rule on names that need encoding.

A wrong encoding would attribute an orphan to a topic the worker then refuses (archived,
never deleted) or, worse, make a name look like another; the parity is checked on names
with spaces, reserved characters and non-ASCII text, through the same check the enqueue
step applies before sending anything.
"""

from __future__ import annotations

import random
import string

from pyspark.sql import SparkSession

from audit.attribution import attribute
from audit.enqueue import pending_deletion
from audit.schema import INVENTORY_SCHEMA
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent, LedgerKind
from deletion.domain.topics import NamespaceName, TopicName

TRICKY = [
    "plain",
    "events v2:raw",
    "a+b",
    "100%",
    "tilde~star*dash-dot._",
    "quotes'\"and`back",
    "q?x=1&y=2#frag",
    "ümlaut-é-中文-🙂",
    "tab\there",
    "orders-partition-7",
    "orders-partition-07",
    "orders-partition-00",
    "orders-partition-2147483648",
    "-partition-",
    "[brackets]{braces}(parens)",
    "semi;colon,comma@at!bang$",
]
POOL = string.ascii_letters + string.digits + " -_.~*+%:&=?#@!$'()[],;äé中🙂\t"
COMPONENTS = list(LedgerComponent)


def _names(count: int) -> list[str]:
    rng = random.Random(186)
    names = set(TRICKY)
    while len(names) < len(TRICKY) + count:
        name = "".join(rng.choice(POOL) for _ in range(rng.randint(1, 12)))
        if name not in (".", "..") and "-partition-" not in name:
            names.add(name)
    return sorted(names)


def test_every_pulsar_spelled_name_is_attributed_as_the_worker_checks_it(
    spark: SparkSession,
) -> None:
    namespaces = [NamespaceName("acme", "orders"), NamespaceName("t-1=x:y.z", "n_s")]
    expected: dict[int, tuple[TopicName, LedgerComponent]] = {}
    rows = []
    for index, local in enumerate(_names(150)):
        topic = TopicName(namespaces[index % 2], local)
        component = COMPONENTS[index % len(COMPONENTS)]
        if component is LedgerComponent.SCHEMA_STORAGE and topic.partition_index is not None:
            topic = topic.base  # schemas belong to the partitioned topic
        metadata = pulsar_custom_metadata(topic, component, cursor=f"sub {index}")
        rows.append((index, 0, {k: v.decode() for k, v in metadata.items()}, None))
        expected[index] = (topic, component)

    attributed = attribute(spark.createDataFrame(rows, INVENTORY_SCHEMA)).collect()

    assert len(attributed) == len(expected)
    for row in attributed:
        topic, component = expected[row["ledger_id"]]
        assert (row["kind"], row["reason"]) == (None, None), (topic.local_name, row["reason"])
        assert row["topic"] == str(topic)
        assert row["namespace"] == str(topic.namespace)
        assert row["component"] == component.value
        info = pending_deletion(row)  # the worker's own check_ownership, applied up front
        assert (info.topic_name, info.ledger_component) == (topic, component)
        assert info.check_ledger_still_in_use


def test_compacted_and_bucket_ledgers_are_attributed_by_kind_to_the_topic_they_name(
    spark: SparkSession,
) -> None:
    """Whether a topic reads a compacted ledger, its metadata may not say (audit.compaction):
    unknown, never an orphan, until its broker said the topic reads another; then it is
    attributed by its kind, as a delayed-delivery bucket snapshot is, to the topic it names in
    full, and enqueued with its kind (the worker checks the rest: deletion/domain/kinds.py)."""
    compacted = {"application": "pulsar", "component": "compacted-ledger",
                 "pulsar/compactedTopic": "persistent://acme/orders/prices"}  # fmt: skip
    bucket = {"application": "pulsar", "component": "delayed-index-bucket",
              "pulsar/delayedIndexTopic": "persistent://acme/orders/late events-partition-3",
              "pulsar/delayedIndexCursor": "sub", "pulsar/delayedIndexBucketKey": "k"}  # fmt: skip
    unnamed = {**bucket, "pulsar/delayedIndexTopic": "acme/orders/late"}  # not in full
    foreign = {"component": "compacted-ledger"}
    rows = [compacted, compacted, foreign, bucket, unnamed]
    frame = spark.createDataFrame(
        [(i, 0, meta, None) for i, meta in enumerate(rows, start=1)], INVENTORY_SCHEMA
    )
    found = {row["ledger_id"]: row for row in attribute(frame, stale_compacted=[2]).collect()}
    assert found[1]["kind"] == "unknown" and "no broker said" in found[1]["reason"]
    assert found[1]["topic"] is None  # never enqueued
    assert found[3]["kind"] == "foreign"
    assert found[5]["kind"] == "unattributable" and "not a topic name" in found[5]["reason"]
    expected = {
        2: (TopicName(NamespaceName("acme", "orders"), "prices"), LedgerKind.COMPACTED_LEDGER),
        4: (
            TopicName(NamespaceName("acme", "orders"), "late events-partition-3"),
            LedgerKind.DELAYED_INDEX_BUCKET,
        ),
    }
    for ledger_id, (topic, kind) in expected.items():
        row = found[ledger_id]
        assert (row["kind"], row["reason"]) == (None, None), row
        assert (row["topic"], row["component"]) == (str(topic), kind.value)
        info = pending_deletion(row)  # the worker's own check_ownership, applied up front
        assert (info.topic_name, info.kind, info.ledger_component) == (topic, kind, kind.component)
        assert info.properties["origin"] == "ledger-janitor-audit"
