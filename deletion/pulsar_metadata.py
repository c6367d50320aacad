"""Pulsar's own metadata layout, read and written through a MetadataStore.

`/managed-ledgers/<ml name>` holds a ManagedLedgerInfo, its children one ManagedCursorInfo
each, and `/schemas/<schema id>` a SchemaLocator. This module is the InUseLedgers adapter
that reads them, plus the writers the embedded default and the tests use.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from ledger_janitor.errors import DecodeError

from .metadata_codec import unwrap
from .ports import ANY_VERSION, MetadataStore, Stat, TopicLedgers
from .proto import require_complete
from .proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from .proto.schema_storage_format_pb2 import SchemaLocator
from .topics import TopicName, managed_ledger_path, schema_path

COMPACTION_CURSOR = "__compaction"
COMPACTED_LEDGER_PROPERTY = "CompactedTopicLedger"


def parse(message: Message, data: bytes, where: str) -> None:
    """Parse a metadata value, compressed or not; anything malformed is a DecodeError."""
    try:
        message.ParseFromString(unwrap(data, where))
    except ProtobufDecodeError as exc:
        raise DecodeError(f"{where}: corrupt {type(message).__name__}: {exc}") from exc
    require_complete(message, where)


class MetadataInUseLedgers:
    """InUseLedgers read straight from Pulsar's metadata store.

    A read or decode failure propagates: it means "unknown", never "not in use".
    """

    def __init__(self, store: MetadataStore, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._clock = clock

    def fetch(self, topic: TopicName) -> TopicLedgers:
        fetched_at = self._clock()
        ml_path = managed_ledger_path(topic)
        node = self._store.get(ml_path)
        ids: set[int] = set()
        if node is not None:
            info = ManagedLedgerInfo()
            parse(info, node.data, ml_path)
            ids.update(ledger.ledgerId for ledger in info.ledgerInfo)
            ids.update(self._cursor_ledgers(ml_path))
        ids.update(self._schema_ledgers(topic))
        return TopicLedgers(topic, node is not None, frozenset(ids), fetched_at)

    def _cursor_ledgers(self, ml_path: str) -> Iterable[int]:
        for cursor in self._store.children(ml_path):
            node = self._store.get(f"{ml_path}/{cursor}")
            if node is None:  # deleted between the listing and the read
                continue
            info = ManagedCursorInfo()
            parse(info, node.data, f"{ml_path}/{cursor}")
            if info.cursorsLedgerId >= 0:
                yield info.cursorsLedgerId
            if cursor == COMPACTION_CURSOR:
                # Best effort: the latest value may sit in the cursor ledger, out of reach
                # here; compacted ledgers are never deletable through a managed-ledger
                # message anyway, since their metadata says component=compactor.
                yield from (p.value for p in info.properties if p.name == COMPACTED_LEDGER_PROPERTY)

    def _schema_ledgers(self, topic: TopicName) -> Iterable[int]:
        node = self._store.get(schema_path(topic))
        if node is None:
            return []
        locator = SchemaLocator()
        parse(locator, node.data, schema_path(topic))
        entries = [locator.info, *locator.index]
        return [entry.position.ledgerId for entry in entries if entry.HasField("position")]


class ManagedLedgerWriter:
    """Writes Pulsar's layout: used by the embedded default, the demo and the tests."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    def read(self, topic: TopicName) -> tuple[ManagedLedgerInfo, int] | None:
        node = self._store.get(managed_ledger_path(topic))
        if node is None:
            return None
        info = ManagedLedgerInfo()
        parse(info, node.data, managed_ledger_path(topic))
        return info, node.stat.version

    def write(self, topic: TopicName, ledger_ids: Iterable[int], version: int | None) -> Stat:
        """Create (version None) or compare-and-set the topic's ledger list."""
        info = ManagedLedgerInfo()
        for ledger_id in ledger_ids:
            info.ledgerInfo.add(ledgerId=ledger_id, entries=0, size=0, timestamp=0)
        data = info.SerializeToString()
        path = managed_ledger_path(topic)
        if version is None:
            return self._store.create(path, data)
        return self._store.set(path, data, version)

    def remove_ledgers(self, topic: TopicName, ledger_ids: Iterable[int]) -> Stat:
        """Drop ledgers from the list with a compare-and-set, as the broker's trimming does."""
        current = self.read(topic)
        if current is None:
            raise DecodeError(f"no managed ledger for {topic}")
        info, version = current
        gone = set(ledger_ids)
        return self.write(
            topic, [li.ledgerId for li in info.ledgerInfo if li.ledgerId not in gone], version
        )

    def write_cursor(self, topic: TopicName, cursor: str, cursor_ledger_id: int) -> Stat:
        path = f"{managed_ledger_path(topic)}/{cursor}"
        data = ManagedCursorInfo(cursorsLedgerId=cursor_ledger_id).SerializeToString()
        if self._store.get(path) is None:
            return self._store.create(path, data)
        return self._store.set(path, data, ANY_VERSION)

    def write_schema(self, topic: TopicName, ledger_ids: list[int]) -> Stat:
        locator = SchemaLocator()
        for version, ledger_id in enumerate(ledger_ids):
            entry = locator.index.add(version=version, hash=b"")
            entry.position.ledgerId, entry.position.entryId = ledger_id, 0
        locator.info.CopyFrom(locator.index[-1])
        path, data = schema_path(topic), locator.SerializeToString()
        if self._store.get(path) is None:
            return self._store.create(path, data)
        return self._store.set(path, data, ANY_VERSION)
