"""Valid encodings of every format in fuzzing.py: the corpus atheris starts from.

Without them libFuzzer spends its minute finding a magic number (0x4778, BookKeeper's header)
byte by byte; every target gets all of them, a wrong format being a fine input too.
"""

from __future__ import annotations

import json

from deletion.domain import message
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.metadata_codec import wrap
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from deletion.wire.proto.ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedLedgerInfo,
    PositionInfo,
)
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator

CODECS = [CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD, CompressionType.SNAPPY]


def _protobufs() -> list[bytes]:
    ledgers = ManagedLedgerInfo(
        ledgerInfo=[ManagedLedgerInfo.LedgerInfo(ledgerId=i, entries=10) for i in (3, 4, 9)]
    ).SerializeToString()
    cursor = ManagedCursorInfo(cursorsLedgerId=12, markDeleteLedgerId=3).SerializeToString()
    locator = SchemaLocator()
    locator.info.version = 1
    locator.info.position.ledgerId, locator.info.position.entryId = 5, 0
    locator.info.hash = b"h"
    position = PositionInfo(ledgerId=3, entryId=7)
    position.individualDeletedMessages.add(
        lowerEndpoint={"ledgerId": 3, "entryId": 9}, upperEndpoint={"ledgerId": 3, "entryId": 12}
    )
    plain = [ledgers, cursor, locator.SerializeToString(), position.SerializeToString()]
    return plain + [wrap(value, codec) for value in plain[:2] for codec in CODECS]


def _bookkeeper() -> bytes:
    metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=0, ackQuorumSize=2)
    metadata.state = LedgerMetadataFormat.CLOSED
    metadata.segment.add(ensembleMember=["b:3181"], firstEntryId=0)
    metadata.customMetadata.add(key="component", value=b"managed-ledger")
    return bk.encode_v3(metadata)


def seeds() -> list[bytes]:
    info = PendingDeleteLedgerInfo(
        TopicName(NamespaceName("tenant", "ns"), "t-partition-1"),
        LedgerComponent.MANAGED_LEDGER,
        LedgerType.LEDGER,
        42,
        properties={"k": "v"},
    )
    footer = json.dumps({"numParts": 2, "length": 6}).encode()
    return [
        message.encode(info),
        *_protobufs(),
        _bookkeeper(),
        footer,
        b"abc\0def\0" + footer,
        b"persistent://tenant/ns/t-partition-1",
        b"tenant/ns/t%2Fu",
    ]
