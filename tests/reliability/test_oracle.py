"""The oracle's own rules, against Java's documented behaviour (fixed vectors), then the
product's names against the oracle's: if they part, the reliability tests' scenarios would
write metadata where the product does not look."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain import topics
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, ManagedLedgerInfo
from tests.reliability.oracle import (
    GroundTruth,
    java_url_encode,
    ml_path,
    partition_index,
    schema_path,
)
from tests.reliability.raw_ledgers import SqliteLedgers, ledger_znode
from tests.reliability.scenario import LOCAL_NAMES

NS = NamespaceName("t", "ns")


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("plain-name_1.2*", "plain-name_1.2*"),
        ("a b", "a+b"),
        ("%+~", "%25%2B%7E"),
        ("x:y/z", "x%3Ay%2Fz"),
        ("\u00e9\u4e16", "%C3%A9%E4%B8%96"),
        ("\U0001f600", "%F0%9F%98%80"),
    ],
)
def test_url_encoding_is_javas(text: str, encoded: str) -> None:
    assert java_url_encode(text) == encoded


@pytest.mark.parametrize(
    ("local", "index"),
    [
        ("t-partition-3", 3),
        ("t-partition-0", 0),
        ("t-partition-01", -1),
        ("t-partition-00", -1),
        ("t-partition-007", -1),
        ("t-partition--1", -1),
        ("t-partition-+1", -1),
        ("t-partition-2147483647", 2147483647),
        ("t-partition-2147483648", -1),
        ("t-partition-", -1),
        ("t-partition-1-partition-2", 2),
        ("t", -1),
    ],
)
def test_partition_index_is_javas(local: str, index: int) -> None:
    assert partition_index(local) == index


def test_schema_paths_of_partitions_and_of_zero_padded_names() -> None:
    assert schema_path(TopicName(NS, "t-partition-3")) == "/schemas/t/ns/t"
    assert schema_path(TopicName(NS, "t-partition-01")) == "/schemas/t/ns/t-partition-01"
    assert schema_path(TopicName(NS, "a b-partition-2")) == "/schemas/t/ns/a+b"
    assert (
        ml_path(TopicName(NS, "a b-partition-2"))
        == "/managed-ledgers/t/ns/persistent/a+b-partition-2"
    )


def test_ledger_znodes_use_the_hierarchical_layout() -> None:
    assert ledger_znode(42) == "/ledgers/00/0000/L0042"
    assert ledger_znode(2**33) == "/ledgers/000/0000/0085/8993/L4592"


@pytest.mark.parametrize("local", LOCAL_NAMES)
def test_the_product_names_scenario_topics_as_the_oracle_does(local: str) -> None:
    topic = TopicName(NS, local)
    assert topics.managed_ledger_path(topic) == ml_path(topic)
    assert topics.schema_path(topic) == schema_path(topic)


def test_ground_truth_follows_its_own_commits(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    store, ledgers = SqliteMetadataStore(path), SqliteLedgerStorage(path)
    truth = GroundTruth(store, ledgers)
    topic = TopicName(NS, LOCAL_NAMES[1])
    seeded = truth.seed(topic, 3, ("sub", "reader"), schema_versions=2)
    assert max(seeded.cursors.values()) < min(seeded.ledgers)  # vouched for by the largest
    assert max(seeded.schemas) < min(seeded.ledgers)
    truth.compress(topic, CompressionType.ZLIB)
    truth.release(topic, seeded.ledgers[:1])
    old = truth.rotate_cursor(topic, "reader")
    assert old not in truth.referenced() and truth[topic].cursors["reader"] in truth.referenced()
    node = store.get(ml_path(topic))
    assert node is not None and node.data.startswith(b"\x47\x78")
    (size,) = struct.unpack(">i", node.data[2:6])
    info = ManagedLedgerInfo.FromString(zlib.decompress(node.data[6 + size :]))
    assert [li.ledgerId for li in info.ledgerInfo] == seeded.ledgers == truth[topic].ledgers
    truth.delete_topic(topic)
    assert truth.referenced() == set()
    assert store.get(ml_path(topic)) is None and store.get(schema_path(topic)) is None
    assert SqliteLedgers(path).alive() == set(truth.owner)
    store.close()
    ledgers.close()
