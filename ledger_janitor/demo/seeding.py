"""Topics with real ledgers in Pulsar's layout, for the demo and the integration tests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import MetadataStore
from deletion.domain.references import managed_ledger_references, schema_references
from deletion.domain.topics import TopicName


class LedgerFactory(Protocol):
    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int: ...


@dataclass
class SeededTopic:
    topic: TopicName
    ledgers: list[int]
    cursor_ledger: int
    schema_ledgers: list[int] = field(default_factory=list)

    def referenced(self) -> set[int]:
        return {*self.ledgers, self.cursor_ledger, *self.schema_ledgers}


class TopicSeeder:
    def __init__(self, store: MetadataStore, ledgers: LedgerFactory, cursor: str = "sub") -> None:
        self._writer = ManagedLedgerWriter(store)
        self._ledgers = ledgers
        self._cursor = cursor
        # Schema ledgers per schema id: a partitioned topic's partitions share one schema.
        self._schemas: dict[str, list[int]] = {}

    def _new(self, topic: TopicName, component: LedgerComponent) -> int:
        return self._ledgers.create_ledger(pulsar_custom_metadata(topic, component, self._cursor))

    def seed(self, topic: TopicName, ledgers: int, schema_versions: int = 0) -> SeededTopic:
        """A managed ledger with `ledgers` ledgers, one cursor, and optional schema versions.

        As in Pulsar, the schema belongs to the topic, not to a partition: one SchemaLocator
        at `/schemas/tenant/ns/<topic>` for all partitions (TopicName.getSchemaName drops the
        partition suffix). A partition whose topic already has schema versions shares them."""
        ids = [self._new(topic, LedgerComponent.MANAGED_LEDGER) for _ in range(ledgers)]
        self._writer.write(topic, ids, version=None)
        cursor = self._new(topic, LedgerComponent.MANAGED_CURSOR)
        self._writer.write_cursor(topic, self._cursor, cursor)
        schemas = self._schemas.get(topic.schema_id, []) if schema_versions else []
        if schema_versions and not schemas:
            schemas = [
                self._new(topic.base, LedgerComponent.SCHEMA_STORAGE)
                for _ in range(schema_versions)
            ]
            self._writer.write_schema(topic, schemas)
            self._schemas[topic.schema_id] = schemas
        return SeededTopic(topic, ids, cursor, list(schemas))

    def release(self, seeded: SeededTopic, ledger_ids: list[int]) -> None:
        """The metadata commit of a trim: drop ledgers from the topic's list (compare-and-set)."""
        self._writer.remove_ledgers(seeded.topic, ledger_ids)
        seeded.ledgers = [i for i in seeded.ledgers if i not in ledger_ids]

    def rotate_cursor(self, seeded: SeededTopic) -> int:
        """Point the cursor at a new ledger; return the old one, now unreferenced."""
        old, seeded.cursor_ledger = (
            seeded.cursor_ledger,
            self._new(seeded.topic, LedgerComponent.MANAGED_CURSOR),
        )
        self._writer.write_cursor(seeded.topic, self._cursor, seeded.cursor_ledger)
        return old


def pending(
    topic: TopicName, ledger_id: int, component: LedgerComponent = LedgerComponent.MANAGED_LEDGER
) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(topic, component, LedgerType.LEDGER, ledger_id)


def store_references(store: MetadataStore) -> set[int]:
    """Every ledger the metadata references, walked as an audit walks it: each managed
    ledger's ledgers and cursors, each topic's schema versions."""
    found: set[int] = set()
    for tenant in store.children("/managed-ledgers"):
        for namespace in store.children(f"/managed-ledgers/{tenant}"):
            persistent = f"/managed-ledgers/{tenant}/{namespace}/persistent"
            for topic in store.children(persistent):
                references = managed_ledger_references(store, f"{persistent}/{topic}") or []
                found.update(reference.ledger_id for reference in references)
    for tenant in store.children("/schemas"):
        for namespace in store.children(f"/schemas/{tenant}"):
            for topic in store.children(f"/schemas/{tenant}/{namespace}"):
                path = f"/schemas/{tenant}/{namespace}/{topic}"
                found.update(
                    reference.ledger_id for reference in schema_references(store, path) or []
                )
    return found
