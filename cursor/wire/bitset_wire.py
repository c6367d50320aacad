"""Repeated `LongListMap` fields (PositionInfo field 6): a ledger id and its BitSet words.

A record is `32 len 08 key (10 word)*`: proto2 repeated scalars are not packed, so each word
carries its own tag, and a word with bit 63 set (a negative Java long) takes 10 bytes. All
tokens are varints, so records are built and parsed column-wise like MessageRanges.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.errors import DecodeError
from cursor.wire.content import LedgerBits
from cursor.wire.varint import decode_varints_at, encode_varints, token_ends, varint_sizes
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import LongListMap

FIELD_TAG = 0x32  # field 6, length-delimited


def encode_long_list_maps(bitsets: Sequence[LedgerBits], tag: int = FIELD_TAG) -> bytes:
    """All records at once: one flat stream of varint tokens, written in one pass."""
    bitsets = [b for b in bitsets if b.words.size]  # Pulsar writes no empty bit set
    if not bitsets:
        return b""
    counts = np.array([b.words.size for b in bitsets], np.int64)
    keys = np.array([b.ledger_id for b in bitsets], np.int64).view(np.uint64)
    words = np.concatenate([b.words for b in bitsets]).astype(np.uint64, copy=False)
    word_bytes = np.zeros(words.size + 1, np.int64)
    np.cumsum(1 + varint_sizes(words).astype(np.int64), out=word_bytes[1:])
    first_word = np.zeros(counts.size, np.int64)
    np.cumsum(counts[:-1], out=first_word[1:])
    payload = 1 + varint_sizes(keys) + word_bytes[first_word + counts] - word_bytes[first_word]
    # Token layout per record: tag, len, 08, key, then (10, word) pairs.
    record = np.zeros(counts.size, np.int64)
    np.cumsum(4 + 2 * counts[:-1], out=record[1:])
    tokens = np.empty(int(record[-1] + 4 + 2 * counts[-1]), np.uint64)
    tokens[record], tokens[record + 1] = tag, payload
    tokens[record + 2], tokens[record + 3] = 0x08, keys
    within = np.arange(words.size, dtype=np.int64) - np.repeat(first_word, counts)
    at = np.repeat(record + 4, counts) + 2 * within
    tokens[at], tokens[at + 1] = 0x10, words
    return encode_varints(tokens)


def decode_long_list_map(payload: bytes, where: str) -> LedgerBits:
    """One record's payload (after tag and length)."""
    buf = np.frombuffer(payload, np.uint8)
    ends = token_ends(buf)
    if ends.size and int(ends[-1]) == buf.size - 1 and ends.size % 2 == 0:
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        sizes = ends - starts + 1
        tags, values = slice(0, None, 2), slice(1, None, 2)
        canonical = (
            bool(np.all(sizes[tags] == 1))
            and int(buf[ends[0]]) == 0x08
            and bool(np.all(buf[ends[2::2]] == 0x10))
            and bool(np.all((sizes[values] < 10) | (buf[ends[1::2]] <= 1)))
            and bool(np.all(sizes[values] <= 10))
        )
        if canonical:
            decoded = decode_varints_at(buf, starts[values], sizes[values])
            return LedgerBits(int(decoded[0].view(np.int64)), decoded[1:].copy())
    # Packed words, fields out of order, unknown fields: let protobuf sort it out.
    message = LongListMap()
    try:
        message.ParseFromString(payload)
    except Exception as exc:
        raise DecodeError(f"{where}: corrupt LongListMap: {exc}") from exc
    require_complete(message, where)
    return LedgerBits(message.key, np.array(message.values, np.int64).view(np.uint64))
