"""Vectors and helpers shared by the wire-format tests."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pb2

from core.errors import DecodeError
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

PROTO_DIR = Path(__file__).resolve().parents[2] / "deletion" / "wire" / "proto"


PROTOS = ["ml_data_formats", "schema_storage_format", "bookkeeper_formats"]


def _without_json_names(file: descriptor_pb2.FileDescriptorProto) -> None:
    """protoc's descriptor sets carry json_name; the Python generator strips it."""

    def strip(message: descriptor_pb2.DescriptorProto) -> None:
        for fld in [*message.field, *message.extension]:
            fld.ClearField("json_name")
        for nested in message.nested_type:
            strip(nested)

    for message in file.message_type:
        strip(message)
    for fld in file.extension:
        fld.ClearField("json_name")


HEADER_V3 = b"BookieMetadataFormatVersion\t3\n"


# LedgerMetadataFormat, field by field:
#   quorumSize   = field 1, varint -> 08 02
#   ensembleSize = field 2, varint -> 10 02
#   length       = field 3, varint -> 18 00
#   state CLOSED = field 5, varint -> 28 03
#   customMetadata = field 11, LEN -> (11 << 3 | 2) = 0x5a, length 21 = 0x15 of:
#     key   = field 1, LEN -> 0a, length 11, "application"
#     value = field 2, LEN -> 12, length 6, "pulsar"
# Body: 2 + 2 + 2 + 2 + 2 + 21 = 31 bytes -> varint32 length 1f.
BODY_V3 = bytes.fromhex("08021002180028035a150a0b") + b"application"


BODY_V3 += bytes.fromhex("1206") + b"pulsar"


VECTOR_V3 = HEADER_V3 + bytes.fromhex("1f") + BODY_V3


# Format version 1 (BookKeeper 4.0/4.1), as serializeVersion1 writes a closed ledger with
# write quorum 2, ensemble 3, length 1024, two ensembles, last entry 41.
VECTOR_V1 = (
    b"BookieMetadataFormatVersion\t1\n2\n3\n1024\n"
    b"0\tb1:3181\tb2:3181\tb3:3181\n"
    b"20\tb1:3181\tb4:3181\tb3:3181\n"
    b"41\tCLOSED"
)


def _decode_or_decode_error(data: bytes) -> None:
    try:
        metadata = bk.decode(data)
    except DecodeError:
        return
    assert isinstance(metadata, LedgerMetadataFormat)
