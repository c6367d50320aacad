"""The inventory scan's streamed reads against a real ZooKeeper: ledgers deleted under the
scan, unreadable ledgers, and trees wider than one round trip of listings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl
from pyspark.sql import SparkSession

from audit.scan.ledgers import ZooKeeperTarget, expand_buckets, scan_buckets, zookeeper_inventory
from config import parse_store_url
from core.errors import MetadataError
from deletion.adapters.opening import StoreSpec
from deletion.wire import bookkeeper_metadata as bk
from harness.zookeeper import ZooKeeperServer
from tests.integration.audit.planting import ledger_metadata

PULSAR = {"application": b"pulsar"}


@pytest.fixture
def target(zookeeper: ZooKeeperServer, chroot: str) -> ZooKeeperTarget:
    return ZooKeeperTarget(StoreSpec(parse_store_url(f"zk:{zookeeper.hosts}{chroot}")))


def plant(zk_client: KazooClient, ledger_ids: list[int]) -> None:
    data = ledger_metadata(PULSAR)
    for parent in sorted({bk.ledger_path(i).rsplit("/", 1)[0] for i in ledger_ids}):
        zk_client.ensure_path(parent)
    for first in range(0, len(ledger_ids), 1000):
        transaction = zk_client.transaction()
        for ledger_id in ledger_ids[first : first + 1000]:
            transaction.create(bk.ledger_path(ledger_id), data)
        assert not any(isinstance(r, Exception) for r in transaction.commit())


def scan_all(target: ZooKeeperTarget) -> Iterator[tuple[int, object, object, object]]:
    store = target.open()
    try:
        buckets = expand_buckets(store.children, target.root, 1)
    finally:
        store.close()
    return scan_buckets(target, buckets)


def test_a_ledger_deleted_after_it_was_listed_is_simply_gone(
    zk_client: KazooClient, target: ZooKeeperTarget
) -> None:
    ids = list(range(5000))
    plant(zk_client, ids)
    rows = scan_all(target)
    first = next(rows)  # listed the whole bucket; some reads in flight, most not yet sent
    zk_client.delete(bk.ledger_path(4900))
    rest = [row[0] for row in rows]
    assert first[0] == 0
    assert sorted([first[0], *rest]) == [i for i in ids if i != 4900]


def test_a_wide_sparse_tree_of_both_layouts_is_read_whole(
    zk_client: KazooClient, target: ZooKeeperTarget
) -> None:
    """More leaf parents than one round trip of listings, and long ids beside short ones."""
    short = [i * 10_000 + 7 for i in range(60)]  # one ledger per 2-4-4 leaf parent
    long = [2**40 + i * 10_000 for i in range(25)]  # one per 3-4-4-4-4 leaf parent
    plant(zk_client, short + long)
    zk_client.create("/ledgers/00/0000/L12x4", b"not a ledger name")
    assert sorted(row[0] for row in scan_all(target)) == short + long


def test_an_unreadable_ledger_aborts_the_scan(
    spark: SparkSession, zk_client: KazooClient, target: ZooKeeperTarget
) -> None:
    plant(zk_client, list(range(100)))
    other = make_digest_acl("someone-else", "secret", all=True)
    unreadable = bk.ledger_path(50_000)
    zk_client.ensure_path(unreadable.rsplit("/", 1)[0])  # listed, then read: the read is refused
    zk_client.create(unreadable, ledger_metadata(PULSAR), acl=[other])
    with pytest.raises(MetadataError, match=r"/ledgers/00/0005/L0000.*NoAuth"):
        list(scan_all(target))
    with pytest.raises(Exception, match="NoAuth"):  # on the executors, as Spark reports it
        zookeeper_inventory(spark, target).collect()
