"""Cursor payloads as Pulsar stores them: compressed with `cursorInfoCompressionType`.

Both the cursor ledger's entries (a PositionInfo each) and the cursor's znode (a
ManagedCursorInfo) go through here, and from here straight to Pulsar's header and codecs in
`deletion.wire.metadata_codec`: `[0x4778][int32 size][ManagedCursorInfoMetadata][payload
compressed]`, as MetaStoreImpl writes it. The metadata message has the same fields as
ManagedLedgerInfoMetadata, so the bytes are the same. A chunked cursor state may
legitimately be far larger than a znode, so the size bound here is the int32 of the header
rather than the znode-sized default of `metadata_codec`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain

from core.errors import ConfigurationError
from cursor.wire.content import PositionInfoContent, WireRanges
from cursor.wire.position_info_codec import (
    decode_position_info,
    decode_position_info_pieces,
    encode_position_info,
)
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
    """The plain payload and the compression it was stored with."""
    return metadata_codec.unwrap_with_type(data, where, MAX_UNCOMPRESSED)


def encode_state(
    content: PositionInfoContent,
    compression: CompressionType.ValueType = CompressionType.NONE,
    max_entry_size: int | None = None,
) -> bytes:
    """A cursor-ledger entry's payload. A state that will be chunked (it reaches
    `max_entry_size` before compression) is laid out with its required fields apart, so that
    no torn part of it can decode as a complete state."""
    return compress(encode_position_info(content, split_from=max_entry_size), compression)


def decode_state(payload: bytes, where: str) -> PositionInfoContent:
    plain, _ = decompress(payload, where)
    return decode_position_info(plain, where)


def decode_state_pieces(
    pieces: Iterable[bytes], where: str, on_ranges: Callable[[WireRanges], None]
) -> PositionInfoContent:
    """`decode_state` of the pieces' concatenation, its ranges handed to `on_ranges` a few MB
    of records at a time (the content returned holds none). Uncompressed, the payload is
    never held whole; compressed, it must be, to be inflated, but its ranges still are not."""
    remaining = iter(pieces)
    head: list[bytes] = []
    while sum(map(len, head)) < len(metadata_codec.MAGIC):
        piece = next(remaining, None)
        if piece is None:
            break
        head.append(piece)
    first = b"".join(head)
    if not metadata_codec.is_wrapped(first):
        return decode_position_info_pieces(chain((first,), remaining), where, on_ranges)
    plain, _ = decompress(b"".join((first, *remaining)), where)
    return decode_position_info_pieces((plain,), where, on_ranges)
