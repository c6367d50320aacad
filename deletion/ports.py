"""The ports the protocol talks through; adapters live side by side in `stores/` and `ledgers/`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .topics import TopicName

ANY_VERSION = -1


@dataclass(frozen=True)
class Stat:
    version: int
    ctime_ms: int
    mtime_ms: int


@dataclass(frozen=True)
class Node:
    data: bytes
    stat: Stat


class MetadataStore(Protocol):
    """A hierarchical key-value store with versions: Pulsar's own MetadataStore contract.

    Errors are `MetadataError`s; a transient failure is a `TransientMetadataError`, and a
    missing node is `None` or `False`, never an error.
    """

    def get(self, path: str) -> Node | None: ...

    def children(self, path: str) -> list[str]: ...

    def create(self, path: str, data: bytes) -> Stat:
        """Create `path` and any missing parents; raise VersionConflictError if it exists."""
        ...

    def set(self, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        """Replace the value if the version matches; raise VersionConflictError otherwise."""
        ...

    def delete(self, path: str, expected_version: int = ANY_VERSION) -> bool:
        """Delete `path`; False when it was already gone."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class LedgerRecord:
    """What the ledger store knows of one ledger: enough to prove who owns it."""

    ledger_id: int
    custom_metadata: Mapping[str, bytes] = field(default_factory=dict)
    ctime_ms: int | None = None
    version: int = ANY_VERSION

    def metadata_text(self, key: str) -> str | None:
        value = self.custom_metadata.get(key)
        return value.decode("utf-8", "replace") if value is not None else None


class LedgerStorage(Protocol):
    """Where ledgers live; deletion is idempotent."""

    def ledger(self, ledger_id: int) -> LedgerRecord | None: ...

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        """Delete the ledger; False when it was already gone."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class TopicLedgers:
    """A snapshot of the ledgers a topic references, taken at `fetched_at` (clock seconds)."""

    topic: TopicName
    exists: bool
    ledger_ids: frozenset[int]
    fetched_at: float

    @property
    def largest(self) -> int | None:
        return max(self.ledger_ids) if self.ledger_ids else None


class InUseLedgers(Protocol):
    """The ledgers a topic still references: managed ledger, cursors and schema."""

    def fetch(self, topic: TopicName) -> TopicLedgers: ...
