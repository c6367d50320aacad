"""Offloaded ledgers as Pulsar's offloaders leave them, for planting in real S3 and directories.

What is written mirrors apache/pulsar (see deletion/adapters/offload/ownership.py for the files):
the blob-store offloader's data and index objects with their user metadata and the index
block's embedded ledger metadata; the filesystem offloader's MapFile (a Hadoop SequenceFile
`data` with the ledger metadata at key -1, its `index`, and the local filesystem's `.crc`
files). tests/unit/test_offload_hadoop.py checks the MapFile against Hadoop's own reader and writer.
The data object's body is not Pulsar's block format: nothing here reads it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deletion.adapters.offload import data_key, index_key
from deletion.wire.index_block import HEADER, INDEX_MAGIC_WORD
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

PULSAR_VERSION, PULSAR_GITSHA, CLUSTER = "3.0.7", "0123456789abcdef", "standalone"


def base_metadata(managed_ledger_name: str) -> dict[str, bytes]:
    """LedgerMetadataUtils.buildBaseManagedLedgerMetadata(name)."""
    return {
        "application": b"pulsar",
        "component": b"managed-ledger",
        "pulsar/managed-ledger": managed_ledger_name.encode(),
    }


def ledger_metadata(custom: Mapping[str, bytes], entries: int = 3) -> bytes:
    """OffloadUtils.buildLedgerMetadataFormat for a closed ledger of `entries` entries."""
    metadata = LedgerMetadataFormat(
        quorumSize=2,
        ackQuorumSize=2,
        ensembleSize=2,
        length=100 * entries,
        state=LedgerMetadataFormat.CLOSED,
        lastEntryId=entries - 1,
        ctime=1_700_000_000_000,
        digestType=LedgerMetadataFormat.CRC32C,
    )
    for key, value in custom.items():
        metadata.customMetadata.add(key=key, value=value)
    metadata.segment.add(firstEntryId=0, ensembleMember=["bookie-1:3181", "bookie-2:3181"])
    return metadata.SerializeToString()


# --- blob store ----------------------------------------------------------------------------------


def index_object(metadata: bytes, entries: int = 3, data_length: int = 1024) -> bytes:
    """OffloadIndexBlockImpl.toStream: header, ledger metadata, (entryId, partId, offset)s."""
    index = b"".join(struct.pack(">qiq", entry, 1, 128) for entry in range(0, entries, 2))
    length = HEADER.size + len(metadata) + len(index)
    count = len(index) // 20
    head = HEADER.pack(INDEX_MAGIC_WORD, length, data_length, 128, count, len(metadata))
    return head + metadata + index


def user_metadata(managed_ledger_name: str | None, role: str) -> dict[str, str]:
    """The blob's user metadata as jclouds sends it; `None`: a release before Pulsar 2.11."""
    metadata = {
        "s3managedledgeroffloadersoftwareversion": PULSAR_VERSION,
        "s3managedledgeroffloadersoftwaregitsha": PULSAR_GITSHA,
    }
    if managed_ledger_name is not None:
        metadata.update(
            {"pulsarclustername": CLUSTER, "role": role, "ManagedLedgerName": managed_ledger_name}
        )
    metadata["s3managedledgeroffloaderformatversion"] = "1"
    return metadata


def plant_s3(
    s3: Any,
    bucket: str,
    ledger_id: int,
    uuid: str,
    managed_ledger_name: str,
    *,
    user_metadata_name: str | None = "same",
    custom: Mapping[str, bytes] | None = None,
    objects: Sequence[str] = ("data", "index"),
) -> set[str]:
    """Plant one offloaded ledger; `user_metadata_name` is what its user metadata names
    ("same": the managed ledger; None: nothing, as before 2.11), `custom` its embedded
    ledger custom metadata (default: the managed ledger's). Returns the keys."""
    named = managed_ledger_name if user_metadata_name == "same" else user_metadata_name
    metadata = ledger_metadata(base_metadata(managed_ledger_name) if custom is None else custom)
    planted = set()
    for role in objects:
        key = data_key(ledger_id, uuid) if role == "data" else index_key(ledger_id, uuid)
        body = b"data block" if role == "data" else index_object(metadata)
        s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata=user_metadata(named, role))
        planted.add(key)
    return planted


# --- filesystem: Hadoop SequenceFile / MapFile ---------------------------------------------------

LONG_WRITABLE = b"org.apache.hadoop.io.LongWritable"
BYTES_WRITABLE = b"org.apache.hadoop.io.BytesWritable"
DEFAULT_CODEC = b"org.apache.hadoop.io.compress.DefaultCodec"
# SequenceFile.Writer draws each file's sync marker at random; fixed here, one per file.
DATA_SYNC, INDEX_SYNC = bytes(range(0x30, 0x40)), bytes(range(0x50, 0x60))
INDEX_INTERVAL = 128  # io.map.index.interval in Pulsar's filesystem_offload_core_site.xml


def vlong(value: int) -> bytes:
    """WritableUtils.writeVLong."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    size, prefix = (value.bit_length() + 7) // 8, -112
    if value < 0:
        value, prefix = ~value, -120
        size = (value.bit_length() + 7) // 8
    return struct.pack(">b", prefix - size) + value.to_bytes(size, "big")


def _text(data: bytes) -> bytes:
    return vlong(len(data)) + data


def _buffer(data: bytes) -> bytes:
    compressed = zlib.compress(data)
    return vlong(len(compressed)) + compressed


def sequence_file(
    records: Sequence[tuple[bytes, bytes]], value_class: bytes, sync: bytes
) -> tuple[bytes, list[int]]:
    """A block-compressed (DefaultCodec) SequenceFile of serialized (key, value)s in one block,
    as io.seqfile.compression.type=BLOCK writes it; also each record's start position."""
    header = b"SEQ\x06" + _text(LONG_WRITABLE) + _text(value_class) + b"\x01\x01"
    header += _text(DEFAULT_CODEC) + struct.pack(">i", 0) + sync
    block = struct.pack(">i", -1) + sync + vlong(len(records))
    block += _buffer(b"".join(vlong(len(key)) for key, _ in records))
    block += _buffer(b"".join(key for key, _ in records))
    block += _buffer(b"".join(vlong(len(value)) for _, value in records))
    block += _buffer(b"".join(value for _, value in records))
    # The writer buffers a block's records, so each starts where the block will.
    return header + block, [len(header)] * len(records)


def crc_file(data: bytes, bytes_per_checksum: int = 512) -> bytes:
    """A ChecksumFileSystem `.crc` file: "crc\\0", bytes per checksum, a CRC32 per chunk."""
    sums = b"".join(
        struct.pack(">I", zlib.crc32(data[at : at + bytes_per_checksum]))
        for at in range(0, len(data), bytes_per_checksum)
    )
    return b"crc\x00" + struct.pack(">i", bytes_per_checksum) + sums


def mapfile(
    records: Sequence[tuple[int, bytes]], syncs: tuple[bytes, bytes] = (DATA_SYNC, INDEX_SYNC)
) -> dict[str, bytes]:
    """The files of a MapFile of LongWritable -> BytesWritable, keys ascending, as Hadoop's
    MapFile.Writer leaves them on a local filesystem with Pulsar's configuration."""
    serialized = [
        (struct.pack(">q", key), struct.pack(">i", len(value)) + value) for key, value in records
    ]
    data, positions = sequence_file(serialized, BYTES_WRITABLE, syncs[0])
    # MapFile.Writer.append indexes a key every interval, but only where the data position
    # moved: in a block-compressed file, once per block.
    sampled, last_count, last_position = [], -INDEX_INTERVAL, -1
    for count, ((key, _), position) in enumerate(zip(serialized, positions, strict=True)):
        if count >= last_count + INDEX_INTERVAL and position > last_position:
            sampled.append((key, struct.pack(">q", position)))
            last_count, last_position = count, position
    index, _ = sequence_file(sampled, LONG_WRITABLE, syncs[1])
    files = {"data": data, "index": index}
    files.update({f".{name}.crc": crc_file(content) for name, content in list(files.items())})
    return files


def offloaded_mapfile(metadata: bytes, entries: int = 3) -> dict[str, bytes]:
    """What LedgerReader.run writes: the ledger metadata at key -1, then each entry."""
    return mapfile([(-1, metadata)] + [(i, b"entry-%d" % i) for i in range(entries)])


def plant_mapfile(
    base: Path,
    managed_ledger_name: str,
    ledger_id: int,
    uuid: str,
    *,
    custom: Mapping[str, bytes] | None = None,
    files: Mapping[str, bytes] | None = None,
) -> Path:
    """The directory `<base>/<managed ledger>/<ledgerId>-<uuid>`; by default its metadata
    names `managed_ledger_name`, `custom` overrides it, `files` replaces the MapFile."""
    if files is None:
        chosen = base_metadata(managed_ledger_name) if custom is None else custom
        files = offloaded_mapfile(ledger_metadata(chosen))
    directory = base.joinpath(*managed_ledger_name.split("/"), f"{ledger_id}-{uuid}")
    directory.mkdir(parents=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)
    return directory
