"""Shared helpers of the store and ledger-storage tests."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.ports import Deletion, Node
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from harness.janitor import Backend, zookeeper_backend
from harness.zookeeper import ZooKeeperServer

BINARY = bytes(range(256)) + b"\x00\x00"


CUSTOM = {
    "application": b"pulsar",
    "component": b"managed-ledger",
    "pulsar/managed-ledger": b"t/ns/persistent/a+b",
    "binary": b"\x00\xff",
}


def _bump_version(backend: Backend, ledger_id: int) -> None:
    """Change the ledger's metadata version, as a concurrent close or recovery would."""
    if isinstance(backend.factory, SqliteLedgerStorage):
        backend.factory.close_ledger(ledger_id)
    else:
        path = bk.ledger_path(ledger_id)
        node = backend.metadata.get(path)
        assert node is not None
        backend.metadata.set(path, node.data, node.stat.version)


@pytest.fixture
def zk(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[Backend]:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    yield backend
    backend.ledgers.close()  # closes the shared store too


def _znode(custom: dict[str, bytes]) -> bytes:
    metadata = LedgerMetadataFormat(quorumSize=1, ensembleSize=1, length=0)
    for key, value in custom.items():
        metadata.customMetadata.add(key=key, value=value)
    return bk.encode_v3(metadata)


class ShortAnswers(ZooKeeperMetadataStore):
    """A store whose batches answer one outcome fewer than they were asked."""

    def get_many(self, paths: Sequence[str]) -> list[Node | None]:
        return super().get_many(paths)[:-1]

    def delete_many(self, versions: Sequence[tuple[str, int]]) -> list[Deletion]:
        return super().delete_many(versions)[:-1]
