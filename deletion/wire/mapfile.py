"""The ledger metadata at key -1 of a filesystem offloader's MapFile (its `data` SequenceFile).

FileSystemManagedLedgerOffloader (tiered-storage/file-system/.../impl/, `LedgerReader.run`)
appends `LongWritable(-1)` -> `BytesWritable(LedgerMetadataFormat)` first, then one record per
entry. Only that first record is read. SequenceFile format 6 (Hadoop's SequenceFile.Writer,
as the pyspark Hadoop jars write it; tests/unit/test_offload_hadoop.py checks against them):

    "SEQ" 6 | Text keyClass | Text valueClass | bool compressed | bool blockCompressed
    | [Text codecClass] | int n, n x (Text, Text) metadata | 16-byte sync
    record:  int recordLength (-1: a sync marker follows) | int keyLength | key | value
    block:   int -1 | sync | vint records | 4 x (vint length | compressed buffer):
             key lengths (vints), keys, value lengths (vints), values

Record compression compresses each value, block compression each buffer. Pulsar's shipped
conf/filesystem_offload_core_site.xml asks for BLOCK; Hadoop's default is RECORD; both use
DefaultCodec (zlib) unless configured otherwise. Other codecs are refused: unreadable.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import BinaryIO

from core.errors import DecodeError
from deletion.wire.proto import require_complete
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

METADATA_KEY = -1
LONG_WRITABLE = "org.apache.hadoop.io.LongWritable"
BYTES_WRITABLE = "org.apache.hadoop.io.BytesWritable"
DEFAULT_CODEC = "org.apache.hadoop.io.compress.DefaultCodec"
SYNC_SIZE = 16
SYNC_ESCAPE = -1
# Bounds on what a well-formed file holds before its first value; beyond them it is not one.
MAX_TEXT = 4096
MAX_HEADER_METADATA = 1024
MAX_BUFFER = 64 << 20
MAX_METADATA = 1 << 20

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


def ledger_metadata(stream: BinaryIO) -> LedgerMetadataFormat:
    """The LedgerMetadataFormat stored at key -1; DecodeError if the file does not hold one."""
    key, value = _first_record(_Reader(stream))
    if key != METADATA_KEY:
        raise DecodeError(f"first key is {key}, not the metadata key {METADATA_KEY}")
    if len(value) < 4 or _INT.unpack_from(value)[0] != len(value) - 4:
        raise DecodeError("metadata value is not a serialized BytesWritable")
    metadata = LedgerMetadataFormat()
    try:
        metadata.ParseFromString(value[4:])
    except Exception as exc:  # protobuf reports bad bytes with its own DecodeError and others
        raise DecodeError(f"metadata value is not a LedgerMetadataFormat: {exc}") from exc
    require_complete(metadata, "MapFile ledger metadata")
    return metadata


class _Reader:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def read(self, size: int) -> bytes:
        data = self._stream.read(size)
        if len(data) != size:
            raise DecodeError(f"file ends after {len(data)} of {size} bytes")
        return data

    def int32(self) -> int:
        value: int = _INT.unpack(self.read(4))[0]
        return value

    def vlong(self) -> int:
        """WritableUtils.readVLong."""
        first = struct.unpack(">b", self.read(1))[0]
        if first >= -112:
            return int(first)
        size = -119 - first if first < -120 else -111 - first
        value = int.from_bytes(self.read(size - 1), "big")
        return ~value if first < -120 else value

    def text(self) -> str:
        """Text.readString: a vint length, then UTF-8."""
        size = self.vlong()
        if not 0 <= size <= MAX_TEXT:
            raise DecodeError(f"a class or metadata name of {size} bytes")
        return self.read(size).decode("utf-8", "replace")

    def sized(self) -> bytes:
        size = self.vlong()
        if not 0 <= size <= MAX_BUFFER:
            raise DecodeError(f"a compressed buffer of {size} bytes")
        return self.read(size)


def _first_record(reader: _Reader) -> tuple[int, bytes]:
    if reader.read(4) != b"SEQ\x06":
        raise DecodeError("not a version-6 Hadoop SequenceFile")
    key_class, value_class = reader.text(), reader.text()
    if (key_class, value_class) != (LONG_WRITABLE, BYTES_WRITABLE):
        raise DecodeError(f"holds {key_class} -> {value_class}, not LongWritable -> BytesWritable")
    compressed, block = reader.read(2)
    if compressed:
        codec = reader.text()
        if codec != DEFAULT_CODEC:
            raise DecodeError(f"compressed with {codec}; only {DEFAULT_CODEC} (zlib) is read")
    count = reader.int32()
    if not 0 <= count <= MAX_HEADER_METADATA:
        raise DecodeError(f"{count} header metadata entries")
    for _ in range(2 * count):
        reader.text()
    sync = reader.read(SYNC_SIZE)
    if block and compressed:
        return _first_of_block(reader, sync)
    return _first_of_records(reader, sync, compressed=bool(compressed))


def _first_of_records(reader: _Reader, sync: bytes, *, compressed: bool) -> tuple[int, bytes]:
    length = reader.int32()
    if length == SYNC_ESCAPE:
        _expect_sync(reader, sync)
        length = reader.int32()
    key_length = reader.int32()
    if key_length != _LONG.size or not key_length < length <= 2 * MAX_METADATA:
        raise DecodeError(f"first record: {length} bytes with a {key_length}-byte key")
    key = _LONG.unpack(reader.read(key_length))[0]
    value = reader.read(length - key_length)
    return key, _inflate(value, MAX_METADATA + 4) if compressed else value


def _first_of_block(reader: _Reader, sync: bytes) -> tuple[int, bytes]:
    if reader.int32() != SYNC_ESCAPE:
        raise DecodeError("block does not start with a sync marker")
    _expect_sync(reader, sync)
    if reader.vlong() < 1:
        raise DecodeError("first block holds no records")
    # Only the first of each buffer is needed; a vint is at most 9 bytes.
    key_lengths = _Reader(io.BytesIO(_inflate(reader.sized(), 9)))
    keys = _inflate(reader.sized(), _LONG.size)
    value_lengths = _Reader(io.BytesIO(_inflate(reader.sized(), 9)))
    if key_lengths.vlong() != _LONG.size or len(keys) != _LONG.size:
        raise DecodeError("first key is not a LongWritable")
    value_length = value_lengths.vlong()
    if not 4 <= value_length <= MAX_METADATA + 4:
        raise DecodeError(f"first value of {value_length} bytes")
    value = _inflate(reader.sized(), value_length)
    if len(value) != value_length:
        raise DecodeError(f"first value ends after {len(value)} of {value_length} bytes")
    return _LONG.unpack(keys)[0], value


def _expect_sync(reader: _Reader, sync: bytes) -> None:
    if reader.read(SYNC_SIZE) != sync:
        raise DecodeError("sync marker does not match the header's")


def _inflate(data: bytes, limit: int) -> bytes:
    """The first `limit` bytes DefaultCodec's zlib stream holds (the rest is not needed)."""
    try:
        return zlib.decompressobj().decompress(data, limit)
    except zlib.error as exc:
        raise DecodeError(f"corrupt zlib data: {exc}") from exc
