"""Topic names exactly as the real broker treats them: for names that need encoding and
partition-like suffixes, the broker's own znodes (its managed ledger and its schema, in its
ZooKeeper) sit where our names say, and a name the broker refuses we refuse too."""

from __future__ import annotations

from pathlib import Path

import httpx
import pulsar
import pytest
from kazoo.client import KazooClient

from core.errors import DecodeError
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path, schema_path
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability import oracle

NAMES = ["a b%+~*\u00e9", "t-partition-01", "x-partition-2", "dots.and_under-score", "t~1"]


class Keyed(pulsar.schema.Record):  # type: ignore[misc]  # pulsar ships no type hints
    key = pulsar.schema.String()


@pytest.mark.parametrize("local", NAMES)
def test_the_brokers_znodes_are_where_our_names_say(
    real_pulsar: RealPulsar, real_namespace: NamespaceName, pulsar_zk: KazooClient,
    client_log: Path, local: str,
) -> None:  # fmt: skip
    topic = TopicName(real_namespace, local)
    client = rig.client(real_pulsar, client_log)
    try:
        schema = pulsar.schema.AvroSchema(Keyed)
        rig.produce(client, topic, 1, value=lambda i: Keyed(key=str(i)), schema=schema)
    finally:
        client.close()
    # The test's own encoder and the product's agree, and the broker's znodes are there.
    assert managed_ledger_path(topic) == oracle.ml_path(topic)
    assert schema_path(topic) == oracle.schema_path(topic)
    children = pulsar_zk.get_children(f"/managed-ledgers/{real_namespace}/persistent")
    assert pulsar_zk.exists(oracle.ml_path(topic)), children
    assert pulsar_zk.exists(oracle.schema_path(topic)), pulsar_zk.get_children(
        f"/schemas/{real_namespace}"
    )
    first = _first_ledger(pulsar_zk, topic)
    assert rig.ledger_metadata(pulsar_zk, first)["pulsar/managed-ledger"] == oracle.ml_name(topic)


def test_partitions_share_one_schema_under_the_base_name(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    pulsar_zk: KazooClient, client_log: Path,
) -> None:  # fmt: skip
    base = TopicName(real_namespace, "p q")
    broker_admin.create_partitioned(base, 2)
    client = rig.client(real_pulsar, client_log)
    try:
        producer = client.create_producer(
            base.full_name, schema=pulsar.schema.AvroSchema(Keyed), batching_enabled=False
        )
        for index in range(4):
            producer.send(Keyed(key=str(index)), partition_key=str(index))
        producer.close()
    finally:
        client.close()
    for index in range(2):
        partition = TopicName(real_namespace, f"p q-partition-{index}")
        assert partition.partition_index == index and partition.base == base
        assert pulsar_zk.exists(managed_ledger_path(partition))
        assert schema_path(partition) == schema_path(base)
    assert pulsar_zk.exists(schema_path(base))


def test_a_partition_of_a_blank_name_is_refused_by_the_broker_and_by_us(
    real_pulsar: RealPulsar, real_namespace: NamespaceName
) -> None:
    """Java's TopicName reads `-partition-5` as partition 5 of a blank local name and refuses
    it; the broker answers every request on it with that error."""
    url = f"{real_pulsar.web_url}/admin/v2/persistent/{real_namespace}/-partition-5/internalStats"
    answer = httpx.get(url, timeout=30)
    assert answer.status_code == 500 and "local name must not be blank" in answer.text
    with pytest.raises(DecodeError, match="partition of a blank name"):
        TopicName.parse(f"{real_namespace}/-partition-5")


def _first_ledger(zk: KazooClient, topic: TopicName) -> int:
    data, _ = zk.get(oracle.ml_path(topic))
    info = ManagedLedgerInfo()
    info.ParseFromString(data)
    return info.ledgerInfo[0].ledgerId
