"""A cursor-ledger entry payload: PositionInfo bytes, compressed as configured."""

from __future__ import annotations

from cursor.wire.compression import compress, decompress
from cursor.wire.content import PositionInfoContent
from cursor.wire.position_info_codec import decode_position_info, position_info_parts
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType


def encode_state(
    content: PositionInfoContent,
    compression: CompressionType.ValueType = CompressionType.NONE,
    max_entry_size: int | None = None,
) -> bytes:
    """The payload to persist. A state that may be chunked (it reaches `max_entry_size`
    before compression) is laid out with its required fields apart, so that no torn part of
    it can decode as a complete state; any proto2 reader still reads it."""
    ledger_field, entry_field, body = position_info_parts(content)
    size = len(ledger_field) + len(entry_field) + len(body)
    if max_entry_size is not None and size >= max_entry_size:
        plain = b"".join((ledger_field, body, entry_field))
    else:
        plain = b"".join((ledger_field, entry_field, body))
    return compress(plain, compression)


def decode_state(payload: bytes, where: str) -> PositionInfoContent:
    plain, _ = decompress(payload, where)
    return decode_position_info(plain, where)
