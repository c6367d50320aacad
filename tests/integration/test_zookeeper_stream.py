"""ZooKeeper's streamed reads on a real server: a bounded window, nodes deleted under it,
errors that end it, and kazoo waiting with select(2) or, past FD_SETSIZE, its own selectors."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from core.errors import MetadataError, TransientMetadataError
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.adapters.stores.zookeeper_multiread import OPS_PER_REQUEST, MultiRead
from deletion.adapters.stores.zookeeper_select import FD_SETSIZE, SelectHandler
from harness.zookeeper import ZooKeeperServer, spy_requests


def _store(zk_client: KazooClient, window: int) -> ZooKeeperMetadataStore:
    return ZooKeeperMetadataStore(zk_client, read_window=window)


def _nodes(zk_client: KazooClient, n: int) -> list[str]:
    transaction = zk_client.transaction()
    paths = [f"/n/{i:04d}" for i in range(n)]
    zk_client.ensure_path("/n")
    for path in paths:
        transaction.create(path, path.encode())
    assert not any(isinstance(r, Exception) for r in transaction.commit())
    return paths


def test_the_window_bounds_the_reads_in_flight(zk_client: KazooClient) -> None:
    """Window 8: multiRead requests of 4 reads, two in flight, after one probing request."""
    paths = _nodes(zk_client, 40)
    drawn: list[str] = []

    def walk() -> Iterator[tuple[str, str]]:
        for path in paths:
            drawn.append(path)
            yield path, path

    taken, ahead = 0, []
    for key, node in _store(zk_client, 8).get_stream(walk()):
        taken += 1
        ahead.append(len(drawn) - (taken - 1))  # sent, less those answered before this one
        assert node is not None and node.data == key.encode()
    assert taken == 40 and len(drawn) == 40
    assert ahead[:4] == [4, 3, 2, 1]  # the probe, alone
    assert max(ahead) == 8 and min(ahead[4:32]) == 5  # refilled a request at a time


def test_reads_go_by_multiread_requests(zk_client: KazooClient) -> None:
    paths = _nodes(zk_client, 1000)
    sent = spy_requests(zk_client)
    nodes = list(_store(zk_client, 2000).get_stream((path, path) for path in paths))
    assert [node.data if node else None for _, node in nodes] == [p.encode() for p in paths]
    assert sent == ["MultiRead"] * (1000 // OPS_PER_REQUEST)


def test_a_server_without_multiread_is_read_one_znode_at_a_time(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An opcode this server does not know is answered as ZooKeeper before 3.6 answers
    multiRead: UNIMPLEMENTED, and the connection closed (kazoo reconnects)."""
    paths = _nodes(zk_client, 500)
    zk_client.delete(paths[3])
    monkeypatch.setattr(MultiRead, "type", 99)
    store = _store(zk_client, 100)
    nodes = dict(store.get_stream((path, path) for path in paths))
    assert store._multi_reader.supported is False
    assert nodes[paths[3]] is None
    read = {path: node.data for path, node in nodes.items() if node is not None}
    assert read == {path: path.encode() for path in paths if path != paths[3]}
    assert dict(store.get_stream([("again", paths[0])]))["again"] is not None


def test_a_node_deleted_while_reads_are_in_flight_is_none(zk_client: KazooClient) -> None:
    paths = _nodes(zk_client, 300)
    stream = _store(zk_client, 100).get_stream((path, path) for path in paths)
    first, _ = next(stream)  # the first request's 50 reads are answered with this one
    assert first == paths[0]
    zk_client.delete(paths[10])  # its read is already answered: it existed then
    zk_client.delete(paths[250])  # listed but not yet read: gone
    answered = {key: node for key, node in stream}
    assert answered[paths[10]] is not None
    assert answered[paths[250]] is None
    assert sum(node is not None for node in answered.values()) == 298


def test_an_unreadable_node_ends_the_stream_naming_it(zk_client: KazooClient) -> None:
    paths = _nodes(zk_client, 20)
    zk_client.create("/n/0010x", b"", acl=[make_digest_acl("someone-else", "secret", all=True)])
    asked = [(p, p) for p in paths[:10]] + [("x", "/n/0010x")] + [(p, p) for p in paths[10:]]
    seen: list[str] = []
    with pytest.raises(MetadataError, match=r"/n/0010x.*NoAuth") as info:
        seen.extend(key for key, _ in _store(zk_client, 8).get_stream(asked))
    assert not isinstance(info.value, TransientMetadataError)
    assert seen == paths[:10]


def test_a_server_lost_mid_stream_is_transient(
    private_zookeeper: ZooKeeperServer, lost_store: ZooKeeperMetadataStore
) -> None:
    paths = _nodes(lost_store.client, 2000)
    stream = lost_store.get_stream((path, path) for path in paths)
    next(stream)
    private_zookeeper.stop()
    with pytest.raises(TransientMetadataError, match="ZooKeeper unavailable"):
        list(stream)


def test_a_server_lost_before_the_first_request_is_transient_not_unsupported(
    private_zookeeper: ZooKeeperServer, lost_store: ZooKeeperMetadataStore
) -> None:
    paths = _nodes(lost_store.client, 10)
    private_zookeeper.stop()
    with pytest.raises(TransientMetadataError, match="ZooKeeper unavailable"):
        list(lost_store.get_stream((path, path) for path in paths))
    assert lost_store._multi_reader.supported is None  # asked again on the next stream


def test_the_handler_waits_past_fd_setsize_as_kazoo_does() -> None:
    """select(2) cannot watch a descriptor past FD_SETSIZE; kazoo's selectors still can."""
    reader, writer = socket.socketpair()
    high = FD_SETSIZE + 10
    try:
        os.dup2(reader.fileno(), high)
    except OSError:
        pytest.skip("this process may not open descriptors past FD_SETSIZE")
    try:
        far = socket.socket(fileno=high)
        writer.send(b"x")
        handler = SelectHandler()
        assert handler.select([far], [], [], 1.0)[0] == [far]
        assert handler.select([reader], [writer], [], 1.0) == ([reader], [writer], [])
        far.detach()
    finally:
        os.close(high)
        reader.close()
        writer.close()
