"""Batch deletes in ZooKeeper multi requests, on a real server: how many requests go, and
what becomes of a batch when one of its deletes fails the multi it was in. The expected
state is read back with a plain kazoo client."""

from __future__ import annotations

import re

import pytest
from kazoo.client import KazooClient

from core.errors import MetadataError, TransientMetadataError
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.adapters.stores.zookeeper_multi_delete import DELETES_PER_REQUEST
from deletion.domain.ports import Deletion
from harness.zookeeper import ZooKeeperServer, spy_requests


def _nodes(zk_client: KazooClient, n: int) -> list[str]:
    zk_client.ensure_path("/d")
    transaction = zk_client.transaction()
    paths = [f"/d/{i:05d}" for i in range(n)]
    for path in paths:
        transaction.create(path, b"x")
    assert not any(isinstance(r, Exception) for r in transaction.commit())
    return paths


def test_deletes_go_by_multi_requests(zk_client: KazooClient) -> None:
    paths = _nodes(zk_client, DELETES_PER_REQUEST + 500)
    sent = spy_requests(zk_client)
    outcomes = ZooKeeperMetadataStore(zk_client).delete_many([(path, 0) for path in paths])
    assert outcomes == [Deletion.DELETED] * len(paths)
    assert sent == ["Transaction", "Transaction"]
    assert zk_client.get_children("/d") == []


def test_a_lone_delete_is_its_own_request(zk_client: KazooClient) -> None:
    (path,) = _nodes(zk_client, 1)
    sent = spy_requests(zk_client)
    assert ZooKeeperMetadataStore(zk_client).delete_many([(path, 0)]) == [Deletion.DELETED]
    assert sent == ["Delete"]


def test_one_gone_and_one_changed_fail_the_multi_and_the_rest_go_one_by_one(
    zk_client: KazooClient,
) -> None:
    """The gone one fails the multi (none of it applied); the rest go again each on its
    own: the changed one stays, every other is deleted, before and after the gone one."""
    paths = _nodes(zk_client, 10)
    zk_client.delete(paths[4])
    zk_client.set(paths[7], b"changed")
    sent = spy_requests(zk_client)
    outcomes = ZooKeeperMetadataStore(zk_client).delete_many([(path, 0) for path in paths])
    expected = [Deletion.DELETED] * 10
    expected[4], expected[7] = Deletion.GONE, Deletion.CHANGED
    assert outcomes == expected
    assert sent == ["Transaction"] + ["Delete"] * 9
    assert zk_client.get_children("/d") == [paths[7].rsplit("/", 1)[1]]


@pytest.mark.parametrize("failing", ["gone", "changed"])
def test_the_delete_that_failed_the_multi_is_final(zk_client: KazooClient, failing: str) -> None:
    paths = _nodes(zk_client, 5)
    if failing == "gone":
        zk_client.delete(paths[2])
    else:
        zk_client.set(paths[2], b"changed")
    sent = spy_requests(zk_client)
    outcomes = ZooKeeperMetadataStore(zk_client).delete_many([(path, 0) for path in paths])
    ended = Deletion.GONE if failing == "gone" else Deletion.CHANGED
    assert outcomes == [Deletion.DELETED] * 2 + [ended] + [Deletion.DELETED] * 2
    assert sent == ["Transaction"] + ["Delete"] * 4  # the failing one is not sent again
    assert zk_client.get_children("/d") == ([] if failing == "gone" else ["00002"])


def test_a_node_with_children_fails_the_batch_naming_it_and_the_others_are_deleted(
    zk_client: KazooClient,
) -> None:
    paths = _nodes(zk_client, 6)
    zk_client.create(f"{paths[2]}/child")
    with pytest.raises(MetadataError, match=paths[2]) as info:
        ZooKeeperMetadataStore(zk_client).delete_many([(path, -1) for path in paths])
    assert "NotEmpty" in str(info.value)
    assert zk_client.get_children("/d") == [paths[2].rsplit("/", 1)[1]]


def test_a_refused_path_fails_the_batch_before_anything_is_sent(zk_client: KazooClient) -> None:
    paths = _nodes(zk_client, 3)
    sent = spy_requests(zk_client)
    with pytest.raises(MetadataError, match=re.escape("/d/../x")):
        ZooKeeperMetadataStore(zk_client).delete_many([(paths[0], 0), ("/d/../x", 0)])
    assert sent == []
    assert len(zk_client.get_children("/d")) == 3


def test_a_lost_server_fails_the_batch_as_transient(
    private_zookeeper: ZooKeeperServer, lost_store: ZooKeeperMetadataStore
) -> None:
    paths = _nodes(lost_store.client, 20)
    private_zookeeper.stop()
    with pytest.raises(TransientMetadataError, match="ZooKeeper unavailable at /d/00000"):
        lost_store.delete_many([(path, 0) for path in paths])
