"""The tests' own ground truth, independent of the product's readers.

`GroundTruth` writes Pulsar's metadata layout itself (its own URL encoder and partition rule,
protobuf bytes from the generated `_pb2` classes, written through the store's plain
get/create/set/delete) and records, per topic and component, which ledgers that metadata
references; it changes the record only when the test itself commits a change. `RawLedgers`
(raw_ledgers.py) reads which ledgers still exist straight from the ledger store. A bug in
the product's reference walk, names, cache or ledger adapter cannot hide behind either:
neither is used to decide what is safe.
"""

from __future__ import annotations

import re
import string
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import lz4.block
import zstandard

from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import MetadataStore
from deletion.domain.topics import TopicName
from deletion.wire.proto.ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedLedgerInfo,
    ManagedLedgerInfoMetadata,
)
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator

# --- Pulsar's names, computed here rather than by deletion.domain.topics ---

_KEPT = frozenset(string.ascii_letters + string.digits + ".-*_")
_SUFFIX = "-partition-"
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def java_url_encode(text: str) -> str:
    """java.net.URLEncoder.encode(text, UTF-8): keep [A-Za-z0-9.-*_], space to '+', the
    rest as %XX of each UTF-8 byte."""
    out: list[str] = []
    for char in text:
        if char in _KEPT:
            out.append(char)
        elif char == " ":
            out.append("+")
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def partition_index(local_name: str) -> int:
    """TopicName.getPartitionIndex: -1 unless the suffix is the canonical digits of an int."""
    if _SUFFIX not in local_name:
        return -1
    digits = local_name.rsplit(_SUFFIX, 1)[1]
    if not _JAVA_INT.fullmatch(digits) or not -(2**31) <= int(digits) < 2**31:
        return -1
    index = int(digits)
    return index if index >= 0 and len(digits) == len(str(index)) else -1


def base_local_name(local_name: str) -> str:
    if partition_index(local_name) < 0:
        return local_name
    return local_name[: local_name.rindex(_SUFFIX)]


def ml_name(topic: TopicName) -> str:
    ns = topic.namespace
    return f"{ns.tenant}/{ns.namespace}/persistent/{java_url_encode(topic.local_name)}"


def ml_path(topic: TopicName) -> str:
    return f"/managed-ledgers/{ml_name(topic)}"


def schema_id(topic: TopicName) -> str:
    ns = topic.namespace
    return f"{ns.tenant}/{ns.namespace}/{java_url_encode(base_local_name(topic.local_name))}"


def schema_path(topic: TopicName) -> str:
    return f"/schemas/{schema_id(topic)}"


def custom_metadata(
    topic: TopicName, component: LedgerComponent, cursor: str = ""
) -> dict[str, bytes]:
    """What a Pulsar broker writes on the ledgers of each component."""
    if component is LedgerComponent.SCHEMA_STORAGE:
        found = {
            "application": "pulsar",
            "component": "schema",
            "pulsar/schemaId": schema_id(topic),
        }
    else:
        found = {"application": "pulsar", "component": "managed-ledger"}
        found["pulsar/managed-ledger"] = ml_name(topic)
        if component is LedgerComponent.MANAGED_CURSOR:
            found["pulsar/cursor"] = cursor
    return {key: value.encode() for key, value in found.items()}


# --- what the test made referenced --------------------------------------------------------


class LedgerFactory(Protocol):
    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int: ...


@dataclass
class TopicTruth:
    topic: TopicName
    ledgers: list[int] = field(default_factory=list)
    cursors: dict[str, int] = field(default_factory=dict)
    schemas: list[int] = field(default_factory=list)
    version: int | None = None  # of the managed-ledger znode as last written; None: deleted
    compression: CompressionType.ValueType = CompressionType.NONE

    @property
    def exists(self) -> bool:
        return self.version is not None

    def referenced(self) -> set[int]:
        return {*self.ledgers, *self.cursors.values(), *self.schemas}


class GroundTruth:
    """Writes topics in Pulsar's layout and records what they reference."""

    def __init__(self, store: MetadataStore, ledgers: LedgerFactory) -> None:
        self._store, self._ledgers = store, ledgers
        self.topics: dict[TopicName, TopicTruth] = {}
        self.owner: dict[int, TopicName] = {}  # every ledger created here, and its topic

    def __getitem__(self, topic: TopicName) -> TopicTruth:
        return self.topics[topic]

    def referenced(self) -> set[int]:
        return set().union(*(truth.referenced() for truth in self.topics.values()))

    def new_ledger(self, topic: TopicName, component: LedgerComponent, cursor: str = "") -> int:
        ledger_id = self._ledgers.create_ledger(custom_metadata(topic, component, cursor))
        self.owner[ledger_id] = topic
        return ledger_id

    def seed(
        self,
        topic: TopicName,
        ledgers: int,
        cursors: Iterable[str] = ("sub",),
        schema_versions: int = 0,
    ) -> TopicTruth:
        """Cursor and schema ledgers are created first, below the topic's largest ledger id:
        a snapshot vouches for them, so a reader that missed them would let them be deleted."""
        truth = self.topics.setdefault(topic, TopicTruth(topic))
        assert not truth.exists, f"{topic} exists"
        new_cursors = {
            c: self.new_ledger(topic, LedgerComponent.MANAGED_CURSOR, c) for c in cursors
        }
        schemas = [
            self.new_ledger(topic, LedgerComponent.SCHEMA_STORAGE) for _ in range(schema_versions)
        ]
        ids = [self.new_ledger(topic, LedgerComponent.MANAGED_LEDGER) for _ in range(ledgers)]
        # Pulsar makes no topic outside a namespace: its policies node comes first
        # (NamespaceResources.createPolicies), and only where it is does an absent topic
        # count as deleted.
        namespace = topic.namespace
        for path in (f"/admin/policies/{namespace.tenant}", f"/admin/policies/{namespace}"):
            if self._store.get(path) is None:
                self._store.create(path, b"{}")
        truth.version = self._store.create(ml_path(topic), _ml_info(ids)).version
        truth.ledgers = ids
        for cursor, ledger_id in new_cursors.items():
            self._put(f"{ml_path(topic)}/{cursor}", _cursor_info(ledger_id))
        truth.cursors = new_cursors
        if schemas:
            self._put(schema_path(topic), _locator(schemas))
            truth.schemas = schemas
        return truth

    def set_ledgers(self, topic: TopicName, ledger_ids: list[int]) -> None:
        """Compare-and-set the managed ledger's list, as the broker does."""
        truth = self.topics[topic]
        assert truth.version is not None, f"{topic} was deleted"
        data = compressed(_ml_info(ledger_ids), truth.compression)
        truth.version = self._store.set(ml_path(topic), data, truth.version).version
        truth.ledgers = list(ledger_ids)

    def compress(self, topic: TopicName, kind: CompressionType.ValueType) -> None:
        """From now on, write the topic's managed-ledger and cursor values compressed."""
        truth = self.topics[topic]
        truth.compression = kind
        self.set_ledgers(topic, truth.ledgers)
        for cursor, ledger_id in truth.cursors.items():
            self._put(f"{ml_path(topic)}/{cursor}", compressed(_cursor_info(ledger_id), kind))

    def release(self, topic: TopicName, ledger_ids: Iterable[int]) -> None:
        """The metadata commit of a trim."""
        gone = set(ledger_ids)
        self.set_ledgers(topic, [i for i in self.topics[topic].ledgers if i not in gone])

    def roll_over(self, topic: TopicName) -> int:
        new = self.new_ledger(topic, LedgerComponent.MANAGED_LEDGER)
        self.set_ledgers(topic, [*self.topics[topic].ledgers, new])
        return new

    def rotate_cursor(self, topic: TopicName, cursor: str, new: int | None = None) -> int:
        """Point the cursor at a new ledger (made now unless given); return the old one."""
        truth = self.topics[topic]
        new = self.new_ledger(topic, LedgerComponent.MANAGED_CURSOR, cursor) if new is None else new
        self._put(f"{ml_path(topic)}/{cursor}", compressed(_cursor_info(new), truth.compression))
        old, truth.cursors[cursor] = truth.cursors[cursor], new
        return old

    def add_schema(self, topic: TopicName, ledger_id: int) -> None:
        truth = self.topics[topic]
        self._put(schema_path(topic), _locator([*truth.schemas, ledger_id]))
        truth.schemas = [*truth.schemas, ledger_id]

    def drop_schemas(self, topic: TopicName, ledger_ids: Iterable[int]) -> None:
        truth, gone = self.topics[topic], set(ledger_ids)
        kept = [i for i in truth.schemas if i not in gone]
        if kept:
            self._put(schema_path(topic), _locator(kept))
        else:
            self._store.delete(schema_path(topic))
        truth.schemas = kept

    def delete_topic(self, topic: TopicName) -> None:
        """The broker's topic deletion, once its ledgers are enqueued: cursors, then the
        managed ledger, then the schema."""
        truth = self.topics[topic]
        for cursor in truth.cursors:
            self._store.delete(f"{ml_path(topic)}/{cursor}")
        truth.cursors = {}
        assert truth.version is not None
        self._store.delete(ml_path(topic), truth.version)
        truth.version, truth.ledgers = None, []
        self.drop_schemas(topic, list(truth.schemas))

    def _put(self, path: str, data: bytes) -> None:
        if self._store.get(path) is None:
            self._store.create(path, data)
        else:
            self._store.set(path, data)


def _ml_info(ledger_ids: Iterable[int]) -> bytes:
    info = ManagedLedgerInfo()
    for ledger_id in ledger_ids:
        info.ledgerInfo.add(ledgerId=ledger_id, entries=1, size=10, timestamp=0)
    return info.SerializeToString()


def compressed(payload: bytes, kind: CompressionType.ValueType) -> bytes:
    """MetaStoreImpl.compressManagedInfo: [0x4778][int32 size][InfoMetadata][payload]."""
    if kind == CompressionType.NONE:
        return payload
    header = ManagedLedgerInfoMetadata(compressionType=kind, uncompressedSize=len(payload))
    body = {
        CompressionType.LZ4: lambda: bytes(lz4.block.compress(payload, store_size=False)),
        CompressionType.ZLIB: lambda: zlib.compress(payload),
        CompressionType.ZSTD: lambda: bytes(zstandard.ZstdCompressor().compress(payload)),
    }[kind]()
    meta = header.SerializeToString()
    return b"\x47\x78" + struct.pack(">i", len(meta)) + meta + body


def _cursor_info(ledger_id: int) -> bytes:
    return ManagedCursorInfo(cursorsLedgerId=ledger_id, markDeleteLedgerId=-1).SerializeToString()


def _locator(ledger_ids: list[int]) -> bytes:
    locator = SchemaLocator()
    for version, ledger_id in enumerate(ledger_ids):
        entry = locator.index.add(version=version, hash=b"h")
        entry.position.ledgerId, entry.position.entryId = ledger_id, 0
    locator.info.CopyFrom(locator.index[-1])
    return locator.SerializeToString()


def pending(
    topic: TopicName,
    ledger_id: int,
    component: LedgerComponent = LedgerComponent.MANAGED_LEDGER,
    check: bool = True,
) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(topic, component, LedgerType.LEDGER, ledger_id, None, check)
