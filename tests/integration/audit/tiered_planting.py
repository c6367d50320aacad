"""Offloaded ledgers as Pulsar leaves them, with the test's own record of what is where.

The ledgers' offload contexts are written here from first principles (the UUID's two signed
halves computed with `uuid`, not through the product's codec), and every key and directory
planted is recorded, so the tests' expectations never come from the code under test.
"""

from __future__ import annotations

import os
import uuid as uuid_lib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deletion.domain.ports import MetadataStore
from deletion.domain.topics import TopicName, managed_ledger_path
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo
from harness.offload_objects import plant_mapfile, plant_s3


def signed_halves(value: str) -> tuple[int, int]:
    """Java's UUID.getMostSignificantBits / getLeastSignificantBits."""
    number = uuid_lib.UUID(value).int
    halves = (number >> 64, number & (2**64 - 1))
    return tuple(h - 2**64 if h >= 2**63 else h for h in halves)  # type: ignore[return-value]


@dataclass(frozen=True)
class Offload:
    uuid: str
    driver: str
    properties: dict[str, str]
    complete: bool = True


@dataclass(frozen=True)
class Ledger:
    ledger_id: int
    offload: Offload | None = None
    bookkeeper_deleted: bool = False
    entries: int = 10
    size: int = 1000


def write_managed_ledger(store: MetadataStore, topic: TopicName, ledgers: list[Ledger]) -> None:
    info = ManagedLedgerInfo()
    for ledger in ledgers:
        entry = info.ledgerInfo.add(
            ledgerId=ledger.ledger_id, entries=ledger.entries, size=ledger.size, timestamp=0
        )
        if ledger.offload is None:
            continue
        context = entry.offloadContext
        context.uidMsb, context.uidLsb = signed_halves(ledger.offload.uuid)
        context.complete = ledger.offload.complete
        context.bookkeeperDeleted = ledger.bookkeeper_deleted
        context.driverMetadata.name = ledger.offload.driver
        for key, value in ledger.offload.properties.items():
            context.driverMetadata.properties.add(key=key, value=value)
    store.create(managed_ledger_path(topic), info.SerializeToString())


def new_uuid() -> str:
    return str(uuid_lib.uuid4())


@dataclass
class Planted:
    """Every offloaded copy planted: S3 keys and MapFile directories, by (ledger, uuid)."""

    s3: Any
    bucket: str
    base: Path
    keys: dict[tuple[int, str], set[str]] = field(default_factory=dict)
    dirs: dict[tuple[int, str], Path] = field(default_factory=dict)

    def in_s3(self, ledger_id: int, uuid: str, name: str, **kwargs: Any) -> tuple[int, str]:
        keys = plant_s3(self.s3, self.bucket, ledger_id, uuid, name, **kwargs)
        expected = {f"{uuid}-ledger-{ledger_id}", f"{uuid}-ledger-{ledger_id}-index"}
        assert keys == expected, keys  # Pulsar's DataBlockUtils key layout
        self.keys[(ledger_id, uuid)] = keys
        return ledger_id, uuid

    def on_disk(
        self, ledger_id: int, uuid: str, name: str, *, mtime: float | None, **kwargs: Any
    ) -> tuple[int, str]:
        directory = plant_mapfile(self.base, name, ledger_id, uuid, **kwargs)
        assert directory == self.base.joinpath(*name.split("/"), f"{ledger_id}-{uuid}")
        if mtime is not None:
            for child in directory.iterdir():
                os.utime(child, (mtime, mtime))
        self.dirs[(ledger_id, uuid)] = directory
        return ledger_id, uuid

    def s3_keys(self) -> set[str]:
        listed = self.s3.list_objects_v2(Bucket=self.bucket).get("Contents", [])
        return {item["Key"] for item in listed}

    def directories(self) -> set[Path]:
        return {path for path in self.dirs.values() if path.exists()}
