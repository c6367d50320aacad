"""Pulsar's optional compression header and its codecs: the one place for both.

`[0x4778][int32 size][Managed{Ledger,Cursor}InfoMetadata][payload compressed with Pulsar's
codec]` (MetaStoreImpl.compressManagedInfo). A raw protobuf never starts with 0x47, whose
wire type 7 does not exist, so the magic cannot be mistaken for a plain value. Managed-ledger
metadata is read here directly; cursor payloads (znodes and ledger entries) come through
`cursor.wire.compression`, which only sets their size bound.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.block
import zstandard

from core.errors import DecodeError
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, ManagedLedgerInfoMetadata

MAGIC = b"\x47\x78"
_HEADER = struct.Struct(">2si")
# Metadata values live in znodes of about 1 MB; this bounds what a hostile value may expand to.
MAX_UNCOMPRESSED = 64 * 1024 * 1024


def is_wrapped(data: bytes) -> bool:
    return data.startswith(MAGIC)


def wrap(payload: bytes, compression: CompressionType.ValueType) -> bytes:
    """Compress as Pulsar's broker does with managedLedgerInfoCompressionType et al."""
    if compression == CompressionType.NONE:
        return payload
    metadata = ManagedLedgerInfoMetadata(compressionType=compression, uncompressedSize=len(payload))
    header = metadata.SerializeToString()
    return _HEADER.pack(MAGIC, len(header)) + header + _compress(payload, compression)


def unwrap(data: bytes, where: str) -> bytes:
    """The plain protobuf payload of a metadata value, compressed or not."""
    return unwrap_with_type(data, where)[0]


def unwrap_with_type(
    data: bytes, where: str, max_uncompressed: int = MAX_UNCOMPRESSED
) -> tuple[bytes, CompressionType.ValueType]:
    """The plain payload and the compression it was stored with. `max_uncompressed` bounds
    what a hostile header may make us allocate: znode-sized by default; cursor-ledger state
    may be far larger."""
    if not is_wrapped(data):
        return data, CompressionType.NONE
    if len(data) < _HEADER.size:
        raise DecodeError(f"{where}: truncated compression header")
    _, size = _HEADER.unpack_from(data)
    if not 0 <= size <= len(data) - _HEADER.size:
        raise DecodeError(f"{where}: compression header claims {size} metadata bytes")
    # ManagedLedgerInfoMetadata and ManagedCursorInfoMetadata have the same fields.
    metadata = ManagedLedgerInfoMetadata()
    try:
        metadata.ParseFromString(data[_HEADER.size : _HEADER.size + size])
    except Exception as exc:
        raise DecodeError(f"{where}: corrupt compression metadata: {exc}") from exc
    require_complete(metadata, where)
    expected = metadata.uncompressedSize
    if not 0 <= expected <= max_uncompressed:
        raise DecodeError(f"{where}: implausible uncompressed size {expected}")
    payload = _decompress(data[_HEADER.size + size :], metadata.compressionType, expected, where)
    if len(payload) != expected:
        raise DecodeError(f"{where}: decompressed {len(payload)} bytes, header says {expected}")
    return payload, metadata.compressionType


def _compress(payload: bytes, compression: CompressionType.ValueType) -> bytes:
    if compression == CompressionType.LZ4:
        return bytes(lz4.block.compress(payload, store_size=False))
    if compression == CompressionType.ZLIB:
        return zlib.compress(payload)
    if compression == CompressionType.ZSTD:
        return bytes(zstandard.ZstdCompressor().compress(payload))
    if compression == CompressionType.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(payload))
    raise DecodeError(f"unknown compression type {compression}")


def _decompress(
    body: bytes, compression: CompressionType.ValueType, size: int, where: str
) -> bytes:
    """Decompress a payload whose header said `size` bytes (the caller checks the length)."""
    try:
        if compression == CompressionType.NONE:
            return body
        if compression == CompressionType.LZ4:  # a raw block: Pulsar stores no frame
            # It expands at most 255-fold: refuse a larger claim before allocating it.
            if size > 255 * len(body) + 64:
                raise DecodeError(f"{len(body)} LZ4 bytes cannot hold {size} bytes")
            return bytes(lz4.block.decompress(body, uncompressed_size=size))
        if compression == CompressionType.ZLIB:
            # One byte past the expected size is enough to detect a lying header.
            return zlib.decompressobj().decompress(body, size + 1)
        if compression == CompressionType.ZSTD:
            return _zstd_at_most(body, size + 1)
        if compression == CompressionType.SNAPPY:
            # Raw Snappy starts with its own length and is decoded whole: a lying header would
            # otherwise be found out only after the whole (up to ~21x larger) output exists.
            if _snappy_length(body) != size:
                raise DecodeError(f"Snappy payload declares {_snappy_length(body)} bytes")
            return bytes(cramjam.snappy.decompress_raw(body))
    except Exception as exc:
        raise DecodeError(f"{where}: {CompressionType.Name(compression)} payload: {exc}") from exc
    raise DecodeError(f"{where}: unknown compression type {compression}")


def _snappy_length(body: bytes) -> int:
    """The uncompressed length a raw Snappy block starts with (a varint of at most 32 bits)."""
    length = 0
    for index, byte in enumerate(body[:5]):
        length |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return length
    raise DecodeError("Snappy payload has no valid length prefix")


def _zstd_at_most(body: bytes, limit: int) -> bytes:
    """Decompress at most `limit` bytes. `decompress(max_output_size=...)` trusts the size a
    frame declares over its argument: a 32 KB value declaring 1 GiB would allocate 1 GiB."""
    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(body) as reader:
        while len(out) < limit:  # read() allocates what it is asked for: ask in small steps
            chunk = reader.read(min(1 << 20, limit - len(out)))
            if not chunk:
                break
            out += chunk
    return bytes(out)
