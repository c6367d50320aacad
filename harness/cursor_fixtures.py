"""Cursor-state fixtures: the real ledger store and a metadata store of either adapter."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cursor import CursorStores
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain.ports import PendingDeletions
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend


@dataclass
class CursorEnv:
    """A topic with a managed ledger, the store its cursors' znodes live in, and the SQLite
    ledger store their ledgers live in (on the SQLite backend, the very same file)."""

    backend: Backend
    ledgers: SqliteLedgerStorage
    ledger_url: str
    topic: TopicName

    def stores(self, deletions: PendingDeletions) -> CursorStores:
        return CursorStores(self.backend.metadata, self.ledgers, deletions)

    def sidecar_settings(self) -> dict[str, object]:
        """What a sidecar needs to find these ledgers (and delete them) on either backend."""
        return {"bookkeeper_metadata_service_uri": self.ledger_url}


@pytest.fixture
def ledgers(tmp_path: Path) -> Iterator[SqliteLedgerStorage]:
    storage = SqliteLedgerStorage(tmp_path / "ledgers.db")
    yield storage
    storage.close()


@pytest.fixture
def cursor_env(backend: Backend, namespace: NamespaceName, tmp_path: Path) -> Iterator[CursorEnv]:
    if isinstance(backend.factory, SqliteLedgerStorage):
        storage, url, own = backend.factory, backend.metadata_url, False
    else:
        path = tmp_path / "cursor-ledgers.db"
        storage, url, own = SqliteLedgerStorage(path), f"sqlite:{path}", True
    topic = TopicName(namespace, "orders-partition-0")
    ManagedLedgerWriter(backend.metadata).write(topic, [], version=None)
    yield CursorEnv(backend, storage, url, topic)
    if own:
        storage.close()
