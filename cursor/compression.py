"""`cursorInfoCompressionType`: Pulsar's compression header around cursor payloads.

`[0x4778][int32 size][ManagedCursorInfoMetadata][payload compressed]`, the header
MetaStoreImpl writes, with Pulsar's codecs from `deletion.metadata_codec`. The metadata
message has the same fields as ManagedLedgerInfoMetadata, so the bytes are the same. A
chunked cursor state may legitimately be far larger than a znode, so the size bound here is
the int32 of the header rather than the znode-sized bound of `metadata_codec.unwrap`.
"""

from __future__ import annotations

import struct

from deletion import metadata_codec
from deletion.proto import require_complete
from deletion.proto.ml_data_formats_pb2 import CompressionType, ManagedCursorInfoMetadata
from ledger_janitor.errors import ConfigurationError, DecodeError

_HEADER = struct.Struct(">2si")
MAX_UNCOMPRESSED = 2**31 - 1  # uncompressedSize is an int32


def compression_type(name: str) -> CompressionType.ValueType:
    """The enum value for a configuration or CLI name (NONE, LZ4, ZLIB, ZSTD, SNAPPY)."""
    try:
        return CompressionType.Value(name.upper())
    except ValueError:
        names = ", ".join(CompressionType.keys())
        raise ConfigurationError(f"unknown compression {name!r}; expected one of {names}") from None


def compress(payload: bytes, compression: CompressionType.ValueType) -> bytes:
    """The payload as Pulsar stores it: unchanged for NONE, else behind the header."""
    return metadata_codec.wrap(payload, compression)


def decompress(data: bytes, where: str) -> tuple[bytes, CompressionType.ValueType]:
    """The plain payload and the compression it was stored with."""
    if not metadata_codec.is_wrapped(data):
        return data, CompressionType.NONE
    if len(data) < _HEADER.size:
        raise DecodeError(f"{where}: truncated compression header")
    _, size = _HEADER.unpack_from(data)
    if not 0 <= size <= len(data) - _HEADER.size:
        raise DecodeError(f"{where}: compression header claims {size} metadata bytes")
    metadata = ManagedCursorInfoMetadata()
    try:
        metadata.ParseFromString(data[_HEADER.size : _HEADER.size + size])
    except Exception as exc:
        raise DecodeError(f"{where}: corrupt compression metadata: {exc}") from exc
    require_complete(metadata, where)
    expected = metadata.uncompressedSize
    if not 0 <= expected <= MAX_UNCOMPRESSED:
        raise DecodeError(f"{where}: implausible uncompressed size {expected}")
    body = data[_HEADER.size + size :]
    # Pulsar's codecs, reused as they are; only the size bound differs from unwrap().
    payload = metadata_codec.decompress_payload(body, metadata.compressionType, expected, where)
    if len(payload) != expected:
        raise DecodeError(f"{where}: decompressed {len(payload)} bytes, header says {expected}")
    return payload, metadata.compressionType
