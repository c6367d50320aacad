"""Hand-derived vectors: our bytes are MLDataFormats.proto's bytes, field by field.

A tag is the varint of (field number << 3 | wire type); wire type 0 is a varint, 2 is
length-delimited (a length varint, then that many bytes). int64 values are two's-complement
varints, so -1 takes ten bytes: ff ff ff ff ff ff ff ff ff 01. proto2 repeated scalars are
not packed: every LongListMap word carries its own tag.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from core.errors import DecodeError
from cursor import (
    BatchIndexes,
    CursorInfoContent,
    LedgerBits,
    Position,
    PositionInfoContent,
    WireRanges,
    compress,
    decode_cursor_info,
    decode_position_info,
    decompress,
    encode_cursor_info,
    encode_position_info,
)
from cursor.persistence.chunking import ChunkFooter
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, ManagedCursorInfo, PositionInfo


def ranges(*rows: tuple[int, int, int, int]) -> WireRanges:
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    return WireRanges(*(np.array(c, np.int64) for c in columns))


# PositionInfo{ledgerId 3, entryId 9, individualDeletedMessages [(3:10, 3:12]]}
#   08 03                 field 1 ledgerId = 3
#   10 09                 field 2 entryId = 9
#   1a 0c                 field 3, a 12-byte MessageRange:
#     0a 04 08 03 10 0a     lowerEndpoint {ledgerId 3, entryId 10}
#     12 04 08 03 10 0c     upperEndpoint {ledgerId 3, entryId 12}
ONE_RANGE = bytes.fromhex("080310091a0c0a040803100a12040803100c")


def test_position_info_with_one_message_range() -> None:
    content = PositionInfoContent(Position(3, 9), ranges((3, 10, 3, 12)))
    assert encode_position_info(content) == ONE_RANGE
    reference = PositionInfo(ledgerId=3, entryId=9)
    low_high = reference.individualDeletedMessages.add()
    low_high.lowerEndpoint.ledgerId, low_high.lowerEndpoint.entryId = 3, 10
    low_high.upperEndpoint.ledgerId, low_high.upperEndpoint.entryId = 3, 12
    assert reference.SerializeToString() == ONE_RANGE
    decoded = decode_position_info(ONE_RANGE)
    assert decoded.mark_delete == Position(3, 9) and decoded.ranges.same_as(content.ranges)


def test_a_range_from_entry_zero_has_a_ten_byte_lower_endpoint() -> None:
    # (7:-1, 7:0] acks entry 0 of ledger 7. lowerEndpoint {08 07, 10 + ten bytes} is 13
    # bytes (0d); upperEndpoint {08 07 10 00} is 4; the MessageRange 2+13+2+4 = 21 (15).
    vector = bytes.fromhex("080310091a150a0d080710ffffffffffffffffff01120408071000")
    content = PositionInfoContent(Position(3, 9), ranges((7, -1, 7, 0)))
    assert encode_position_info(content) == vector
    assert decode_position_info(vector).ranges.same_as(content.ranges)


def test_long_list_map_properties_and_batch_index_info() -> None:
    # md 4:0 -> 08 04 10 00
    # field 4 LongProperty{0a 01 'a', 10 02}: 22 05 0a 01 61 10 02
    # field 5 BatchedEntryDeletionIndexInfo{0a 04 {08 05 10 06}, 10 0a}: 2a 08 ...
    #   deleteSet word 0b1010: indexes 1 and 3 of the batch at 5:6 are still unacked
    # field 6 LongListMap{08 05, 10 0a, 10 80 80 80 80 80 80 80 80 80 01}: 32 0f ...
    #   word 0 = 0b1010 (entries 1 and 3), word 1 = 1 << 63 (entry 127, a negative long)
    vector = bytes.fromhex(
        "0804100022050a016110022a080a0408051006100a320f0805100a1080808080808080808001"
    )
    words = np.array([0b1010, 1 << 63], np.uint64)
    content = PositionInfoContent(
        Position(4, 0),
        bitsets=(LedgerBits(5, words),),
        batch_indexes=(BatchIndexes(Position(5, 6), (0b1010,)),),
        properties={"a": 2},
    )
    assert encode_position_info(content) == vector
    reference = PositionInfo.FromString(vector)
    assert list(reference.individualDeletedMessageRanges[0].values) == [10, -(1 << 63)]
    assert reference.SerializeToString() == vector
    decoded = decode_position_info(vector)
    assert decoded.bitsets[0].ledger_id == 5 and np.array_equal(decoded.bitsets[0].words, words)
    assert decoded.batch_indexes == content.batch_indexes and decoded.properties == {"a": 2}
    assert BatchIndexes.of_mask(Position(5, 6), 0b1010).delete_set == (0b1010,)


def test_managed_cursor_info() -> None:
    # 08 0c / 10 03 / 18 09: cursorsLedgerId 12, markDeleteLedgerId 3, markDeleteEntryId 9
    # 22 0c ...: field 4 individualDeletedMessages, the MessageRange above
    # 2a 05 0a 01 61 10 02: field 5 LongProperty a=2
    # 30 e8 07: field 6 lastActive 1000 (0x3e8 -> e8 07)
    # 42 06 0a 01 6b 12 01 76: field 8 StringProperty k=v
    vector = bytes.fromhex(
        "080c10031809220c0a040803100a12040803100c2a050a0161100230e80742060a016b120176"
    )
    content = CursorInfoContent(
        cursors_ledger_id=12,
        mark_delete=Position(3, 9),
        ranges=ranges((3, 10, 3, 12)),
        properties={"a": 2},
        last_active=1000,
        cursor_properties={"k": "v"},
    )
    assert encode_cursor_info(content) == vector
    assert ManagedCursorInfo.FromString(vector).SerializeToString() == vector
    decoded = decode_cursor_info(vector)
    assert decoded.cursors_ledger_id == 12 and decoded.mark_delete == Position(3, 9)
    assert decoded.ranges.same_as(content.ranges) and decoded.last_active == 1000
    assert decoded.cursor_properties == {"k": "v"} and decoded.properties == {"a": 2}


def test_compression_header_is_metastore_impls() -> None:
    # 47 78 magic, 00 00 00 04 metadata size, ManagedCursorInfoMetadata{08 02 ZLIB,
    # 10 12 uncompressedSize 18}, then the zlib stream of the 18-byte payload.
    wrapped = compress(ONE_RANGE, CompressionType.ZLIB)
    assert wrapped == bytes.fromhex("47780000000408021012") + zlib.compress(ONE_RANGE)
    assert decompress(wrapped, "test") == (ONE_RANGE, CompressionType.ZLIB)
    assert decompress(ONE_RANGE, "test") == (ONE_RANGE, CompressionType.NONE)


def test_split_layout_moves_entry_id_last_and_parses_the_same() -> None:
    content = PositionInfoContent(Position(3, 9), ranges((3, 10, 3, 12)))
    split = encode_position_info(content, split_required=True)
    assert split == bytes.fromhex("08031a0c0a040803100a12040803100c1009")
    assert PositionInfo.FromString(split) == PositionInfo.FromString(ONE_RANGE)
    with pytest.raises(DecodeError, match="entryId"):
        decode_position_info(split[:-2])  # a torn prefix lacks entryId
    with pytest.raises(DecodeError, match="ledgerId"):
        decode_position_info(split[2:])  # a torn suffix lacks ledgerId


def test_chunk_footer_is_jacksons_rendering() -> None:
    footer = ChunkFooter(3, 2500)
    assert footer.to_bytes() == b'{"numParts":3,"length":2500}'
    assert ChunkFooter.parse(b'{ "length": 2500, "numParts": 3 }') == footer
    assert ChunkFooter.parse(ONE_RANGE) is None


def test_non_canonical_but_valid_encodings_still_decode() -> None:
    # The MessageRange with upperEndpoint first, and a LongListMap with packed values
    # (12 0b: field 2 as one length-delimited run), both of which proto2 parsers accept.
    swapped = bytes.fromhex("080310091a0c12040803100c0a040803100a")
    assert decode_position_info(swapped).ranges.same_as(ranges((3, 10, 3, 12)))
    packed = bytes.fromhex("08041000320f0805120b0a80808080808080808001")
    bits = decode_position_info(packed).bitsets[0]
    assert bits.ledger_id == 5 and bits.words.tolist() == [0b1010, 1 << 63]


@pytest.mark.parametrize(
    "vector",
    [
        ONE_RANGE[:-1],  # truncated
        ONE_RANGE + bytes.fromhex("7a05ab"),  # field 15, 5 bytes promised, 1 there
        ONE_RANGE + bytes.fromhex("7b7c"),  # field 15 as a group: never a new field
        ONE_RANGE + bytes.fromhex("7e01"),  # wire type 6 does not exist
        ONE_RANGE + bytes.fromhex("1805"),  # field 3 as a varint: the wrong wire type
        bytes.fromhex("0803"),  # no entryId
    ],
)
def test_malformed_bytes_raise_decode_error(vector: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_position_info(vector)


# Fields a newer Pulsar might add, one per wire type: 78 01 (field 15, varint 1),
# 79 + 8 bytes (fixed64), 7a 02 68 69 (length-delimited "hi"), 7d + 4 bytes (fixed32),
# and a two-byte tag: a0 06 2a (field 100, varint 42).
NEWER_FIELDS = bytes.fromhex("78017901020304050607087a0268697d01020304a0062a")


def test_fields_from_a_newer_pulsar_are_skipped_as_protobuf_java_does() -> None:
    # Between the mark-delete and the ranges, and after them: anywhere a writer puts them.
    head, tail = ONE_RANGE[:4], ONE_RANGE[4:]
    for vector in (head + NEWER_FIELDS + tail, ONE_RANGE + NEWER_FIELDS):
        decoded = decode_position_info(vector)
        assert decoded.mark_delete == Position(3, 9)
        assert decoded.ranges.same_as(ranges((3, 10, 3, 12)))
    cursor_info = bytes.fromhex("080c10031809") + NEWER_FIELDS + bytes.fromhex("30e807")
    decoded_info = decode_cursor_info(cursor_info)
    assert decoded_info.mark_delete == Position(3, 9) and decoded_info.last_active == 1000
    assert decoded_info.cursors_ledger_id == 12


def test_a_newer_field_does_not_excuse_a_missing_required_one() -> None:
    with pytest.raises(DecodeError, match="entryId"):
        decode_position_info(bytes.fromhex("0803") + NEWER_FIELDS)
