"""Pulsar's compression header on metadata values: vectors, round trips, hostile input."""

from __future__ import annotations

import contextlib
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import DecodeError
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path
from deletion.wire.metadata_codec import unwrap, wrap
from deletion.wire.proto.ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedLedgerInfo,
    ManagedLedgerInfoMetadata,
)
from harness.janitor import Backend
from ledger_janitor.demo.seeding import TopicSeeder

ALL = [CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD, CompressionType.SNAPPY]


def test_header_bytes_follow_metastore_impl() -> None:
    payload = bytes.fromhex("0a020807")  # ManagedLedgerInfo { ledgerInfo { ledgerId: 7 } }
    wrapped = wrap(payload, CompressionType.ZLIB)
    # 47 78: magic; 00000004: metadata size, big-endian int32;
    # 08 02: compressionType (field 1, varint) = ZLIB; 10 04: uncompressedSize (field 2) = 4.
    assert wrapped[:10] == bytes.fromhex("47780000000408021004")
    assert zlib.decompress(wrapped[10:]) == payload


def test_uncompressed_values_pass_through() -> None:
    raw = ManagedLedgerInfo(
        ledgerInfo=[ManagedLedgerInfo.LedgerInfo(ledgerId=3)]
    ).SerializeToString()
    assert wrap(raw, CompressionType.NONE) == raw
    assert unwrap(raw, "x") == raw


@pytest.mark.parametrize("compression", ALL, ids=CompressionType.Name)
@given(ids=st.lists(st.integers(0, 2**63 - 1), max_size=300))
@settings(max_examples=40, deadline=None)
def test_round_trip(compression: CompressionType.ValueType, ids: list[int]) -> None:
    info = ManagedLedgerInfo(ledgerInfo=[ManagedLedgerInfo.LedgerInfo(ledgerId=i) for i in ids])
    raw = info.SerializeToString()
    assert unwrap(wrap(raw, compression), "x") == raw


@pytest.mark.parametrize("compression", ALL, ids=CompressionType.Name)
def test_a_header_that_lies_about_the_size_is_refused(
    compression: CompressionType.ValueType,
) -> None:
    raw = bytes(range(200)) * 5
    body = wrap(raw, compression)[11:]  # header: 2 + 4 + 5 bytes of metadata for 1000
    for claimed in (999, 1001):
        metadata = ManagedLedgerInfoMetadata(compressionType=compression, uncompressedSize=claimed)
        header = metadata.SerializeToString()
        with pytest.raises(DecodeError):
            unwrap(b"\x47\x78" + len(header).to_bytes(4, "big") + header + body, "x")


def test_snappy_is_refused_on_its_own_length_prefix_before_decoding() -> None:
    """Raw Snappy cannot stop early: the length it starts with is checked first."""
    snappy = CompressionType.SNAPPY
    body = wrap(b"\0" * 1000, snappy)[11:]
    metadata = ManagedLedgerInfoMetadata(compressionType=snappy, uncompressedSize=99)
    header = metadata.SerializeToString()
    with pytest.raises(DecodeError, match="declares 1000 bytes"):
        unwrap(b"\x47\x78" + len(header).to_bytes(4, "big") + header + body, "x")


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_hostile_bytes_after_the_magic_only_raise_decode_error(tail: bytes) -> None:
    with contextlib.suppress(DecodeError):
        unwrap(b"\x47\x78" + tail, "x")


def test_implausible_uncompressed_size_is_refused_before_decompressing() -> None:
    header = bytes.fromhex("477800000007080310ffffff7f")  # ZSTD, 2**31-1 bytes
    with pytest.raises(DecodeError, match="implausible"):
        unwrap(header + b"\x28\xb5\x2f\xfd", "x")


@pytest.mark.parametrize("compression", ALL, ids=CompressionType.Name)
def test_compressed_metadata_is_read_as_in_use(
    backend: Backend, namespace: NamespaceName, compression: CompressionType.ValueType
) -> None:
    seeded = TopicSeeder(backend.metadata, backend.factory).seed(
        TopicName(namespace, "z"), ledgers=4
    )
    ml_path = managed_ledger_path(seeded.topic)
    for path in (ml_path, f"{ml_path}/sub"):
        node = backend.metadata.get(path)
        assert node is not None
        backend.metadata.set(path, wrap(node.data, compression))
    fetched = MetadataInUseLedgers(backend.metadata).fetch(seeded.topic)
    assert fetched.ledger_ids == frozenset(seeded.referenced())


def test_compacted_ledger_of_the_compaction_cursor_is_in_use(
    backend: Backend, namespace: NamespaceName
) -> None:
    seeded = TopicSeeder(backend.metadata, backend.factory).seed(
        TopicName(namespace, "c"), ledgers=2
    )
    cursor = ManagedCursorInfo(cursorsLedgerId=-1, markDeleteLedgerId=1, markDeleteEntryId=0)
    cursor.properties.add(name="CompactedTopicLedger", value=987654)
    backend.metadata.create(
        f"{managed_ledger_path(seeded.topic)}/__compaction", cursor.SerializeToString()
    )
    fetched = MetadataInUseLedgers(backend.metadata).fetch(seeded.topic)
    assert 987654 in fetched.ledger_ids
    assert fetched.ledger_ids >= frozenset(seeded.referenced())
