"""Topics with real ledgers in Pulsar's layout, for the demo and the integration tests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import MetadataStore
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

    def _new(self, topic: TopicName, component: LedgerComponent) -> int:
        return self._ledgers.create_ledger(pulsar_custom_metadata(topic, component, self._cursor))

    def seed(self, topic: TopicName, ledgers: int, schema_versions: int = 0) -> SeededTopic:
        """A managed ledger with `ledgers` ledgers, one cursor, and optional schema versions."""
        ids = [self._new(topic, LedgerComponent.MANAGED_LEDGER) for _ in range(ledgers)]
        self._writer.write(topic, ids, version=None)
        cursor = self._new(topic, LedgerComponent.MANAGED_CURSOR)
        self._writer.write_cursor(topic, self._cursor, cursor)
        schemas = [self._new(topic, LedgerComponent.SCHEMA_STORAGE) for _ in range(schema_versions)]
        if schemas:
            self._writer.write_schema(topic, schemas)
        return SeededTopic(topic, ids, cursor, schemas)

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
