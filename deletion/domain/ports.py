"""The ports the protocol talks through; adapters live side by side in `stores/` and `ledgers/`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import islice
from typing import Any, Protocol, TypeVar

from core.clock import EpochSeconds
from core.errors import VersionConflictError
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.topics import TopicName

ANY_VERSION = -1
STREAM_CHUNK = 1000  # reads per get_many of the default get_stream
K = TypeVar("K")
T = TypeVar("T")


class Deletion(Enum):
    """How one delete of a batch ended."""

    DELETED = "deleted"
    GONE = "gone"  # it was already gone
    CHANGED = "changed"  # it is not at the expected version: someone else changed it


@dataclass(frozen=True)
class Session:
    """A store's connection as the deleter must know it: whether it is connected now, and
    since when (wall-clock) without a break. A store with no connection of its own (a file)
    is always connected, since the epoch."""

    connected: bool
    since: EpochSeconds


ALWAYS = Session(True, EpochSeconds(0.0))


def latest(*sessions: Session) -> Session:
    """Several stores as one: connected only if each is, since the newest (re)connection."""
    return Session(all(s.connected for s in sessions), max(s.since for s in sessions))


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

    # Batches: one at a time here; a store that can pipeline does, so that a batch costs
    # about one round trip. An error fails the batch, some of whose operations may have
    # been done: a batch is retried whole, which versioned, idempotent deletes allow.

    def get_many(self, paths: Sequence[str]) -> list[Node | None]:
        return [self.get(path) for path in paths]

    def delete_many(self, versions: Sequence[tuple[str, int]]) -> list[Deletion]:
        return [_deletion(self.delete, path, version) for path, version in versions]

    def children_many(self, paths: Sequence[str]) -> list[list[str]]:
        return [self.children(path) for path in paths]

    def get_stream(self, keyed: Iterable[tuple[K, str]]) -> Iterator[tuple[K, Node | None]]:
        """Each `(key, path)`'s node, in order, read ahead of the caller: by batches of
        get_many here; a store that can pipeline keeps a bounded window of reads in flight
        instead, refilled as replies arrive. `keyed` is drawn lazily, so it may be a walk of
        the tree. An error ends the stream with it; a missing node is None."""
        pairs = iter(keyed)
        while chunk := list(islice(pairs, STREAM_CHUNK)):
            nodes = self.get_many([path for _, path in chunk])
            yield from zip((key for key, _ in chunk), nodes, strict=True)

    def session(self) -> Session:
        """The connection's state (see Session); a store without one is always connected."""
        return ALWAYS

    def close(self) -> None: ...


def _deletion(delete: Callable[[K, int], bool], key: K, version: int) -> Deletion:
    try:
        return Deletion.DELETED if delete(key, version) else Deletion.GONE
    except VersionConflictError:
        return Deletion.CHANGED


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

    # Batches, as for MetadataStore: a loop here, pipelined where the adapter can.

    def ledgers(self, ledger_ids: Sequence[int]) -> dict[int, LedgerRecord | None]:
        return {ledger_id: self.ledger(ledger_id) for ledger_id in ledger_ids}

    def delete_ledgers(self, versions: Mapping[int, int]) -> dict[int, Deletion]:
        """Delete each ledger at its expected version."""
        return {
            ledger_id: _deletion(self.delete_ledger, ledger_id, version)
            for ledger_id, version in versions.items()
        }

    def session(self) -> Session:
        return ALWAYS

    def close(self) -> None: ...


@dataclass(frozen=True)
class Creators:
    """What each of a topic's sequential ledger creators had last recorded in a snapshot: the
    managed ledger's newest data ledger (None: it lists none) and each cursor's ledger (-1:
    none yet). A creator makes one ledger at a time, and records it or gives it up before it
    makes the next, so a ledger below what its creator last recorded is never recorded later
    (see decision.decide_recordable)."""

    newest_data: int | None
    cursors: Mapping[str, int]


@dataclass(frozen=True)
class TopicLedgers:
    """A snapshot of the ledgers a topic references, read no earlier than `fetched_at`."""

    topic: TopicName
    exists: bool  # the topic's managed ledger was found
    ledger_ids: frozenset[int]
    fetched_at: EpochSeconds
    # Per referenced ledger, the offload UUIDs its metadata names (none: absent). None when the
    # source cannot tell (the admin API): then any copy of a referenced ledger counts as in use.
    offload_uuids: Mapping[int, frozenset[str]] | None = None
    # What the creators had recorded; None when the source cannot tell, and then no creator
    # of an existing topic vouches for any ledger.
    creators: Creators | None = None
    # Each cursor (by the name Pulsar decodes from its znode) and the ledger of its mark-delete
    # position as its znode records it (-1: none); None when the source cannot read the cursors
    # (the admin API), and then no delayed-delivery bucket is judged (kinds.bucket_still_read).
    acked_through: Mapping[str, int] | None = None
    # The compacted ledger the `__compaction` cursor's znode names (it may lag the cursor's
    # ledger); None: none named, or a source that cannot read it.
    compacted: int | None = None

    def offload_referenced(self, ledger_id: int, uuid: str) -> bool:
        """Whether the offloaded copy `uuid` of the ledger is in use (True when unknown)."""
        if ledger_id not in self.ledger_ids:
            return False
        if self.offload_uuids is None:
            return True
        return uuid in self.offload_uuids.get(ledger_id, frozenset())

    @property
    def largest(self) -> int | None:
        return max(self.ledger_ids) if self.ledger_ids else None


class InUseLedgers(Protocol):
    """The ledgers a topic still references: managed ledger, cursors and schema."""

    def fetch(self, topic: TopicName) -> TopicLedgers: ...


class PendingDeletions(Protocol):
    """Phase one, as the cursor's rotation and the archive drain use it (`producers.PhaseOne`)."""

    def enqueue(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Any]: ...

    def enqueue_then_commit(
        self, infos: Sequence[PendingDeleteLedgerInfo], commit: Callable[[], T]
    ) -> T: ...
