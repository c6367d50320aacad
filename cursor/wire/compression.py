"""`cursorInfoCompressionType`: Pulsar's compression header around cursor payloads.

`[0x4778][int32 size][ManagedCursorInfoMetadata][payload compressed]`, the header
MetaStoreImpl writes, with Pulsar's codecs from `deletion.wire.metadata_codec`. The metadata
message has the same fields as ManagedLedgerInfoMetadata, so the bytes are the same. A
chunked cursor state may legitimately be far larger than a znode, so the size bound here is
the int32 of the header rather than the znode-sized bound of `metadata_codec.unwrap`.
"""

from __future__ import annotations

from core.errors import ConfigurationError
from deletion.wire import metadata_codec
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType

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
    """The plain payload and the compression it was stored with; the size bound is the
    header's int32, not the znode-sized bound of `metadata_codec.unwrap`."""
    return metadata_codec.unwrap_with_type(data, where, MAX_UNCOMPRESSED)
