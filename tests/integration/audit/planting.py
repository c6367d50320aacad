"""Planting a cluster's state in Pulsar's and BookKeeper's layout, for the audit tests."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.ports import MetadataStore
from deletion.domain.topics import TopicName, managed_ledger_path
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

# BookKeeper's own nodes besides LAYOUT, which every test chroot holds already
# (harness.janitor.chrooted: nothing reads a ledger store without it).
BOOKKEEPER_OWN = [
    "/ledgers/INSTANCEID",
    "/ledgers/available/bookie-1:3181",
    "/ledgers/idgen/ID-0000000042",
    "/ledgers/cookies/bookie-1:3181",
    "/ledgers/underreplication/locks",
]


def ledger_metadata(
    custom: Mapping[str, bytes], ctime_ms: int | None = None, length: int | None = None
) -> bytes:
    """BookKeeper format v3, as a broker's client writes it (ctime only if BookKeeper
    is configured to store it; a length once closed)."""
    metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=length or 0)
    metadata.ackQuorumSize = 2
    metadata.state = (
        LedgerMetadataFormat.CLOSED if length is not None else LedgerMetadataFormat.OPEN
    )
    metadata.segment.add(ensembleMember=["bookie-1:3181", "bookie-2:3181"], firstEntryId=0)
    if ctime_ms is not None:
        metadata.ctime = ctime_ms
    for key, value in custom.items():
        metadata.customMetadata.add(key=key, value=value)
    return bk.encode_v3(metadata)


class ZkLedgers:
    """Ledger znodes with explicit ids, creation times and lengths."""

    def __init__(self, store: MetadataStore, first_id: int = 1) -> None:
        self._store = store
        self._ids = itertools.count(first_id)

    def create(
        self,
        custom: Mapping[str, bytes],
        ctime_ms: int | None = None,
        length: int | None = None,
        ledger_id: int | None = None,
    ) -> int:
        chosen = next(self._ids) if ledger_id is None else ledger_id
        self._store.create(bk.ledger_path(chosen), ledger_metadata(custom, ctime_ms, length))
        return chosen

    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int:
        """The seeding.LedgerFactory protocol."""
        return self.create(custom_metadata)

    def of(self, topic: TopicName, component: LedgerComponent, **kwargs: int | None) -> int:
        return self.create(pulsar_custom_metadata(topic, component), **kwargs)


def write_offloaded(store: MetadataStore, topic: TopicName, ledgers: Mapping[int, bool]) -> None:
    """A managed ledger whose ledgers are offloaded; True = deleted from BookKeeper too."""
    info = ManagedLedgerInfo()
    for ledger_id, bookkeeper_deleted in ledgers.items():
        entry = info.ledgerInfo.add(ledgerId=ledger_id, entries=10, size=1000, timestamp=0)
        entry.offloadContext.complete = True
        entry.offloadContext.bookkeeperDeleted = bookkeeper_deleted
    store.create(managed_ledger_path(topic), info.SerializeToString())
