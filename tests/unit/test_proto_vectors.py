"""Pulsar's metadata protobufs: the generated modules match their .proto files, and Java's bytes
decode and re-encode (ManagedLedgerInfo, ManagedCursorInfo, SchemaLocator)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf import descriptor_pb2

from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator
from tests.unit.wire_vectors import (
    PROTO_DIR,
    PROTOS,
    _without_json_names,
)


@pytest.mark.parametrize("name", PROTOS)
def test_generated_module_matches_its_proto(name: str, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.pb"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"--descriptor_set_out={out}",
            str(PROTO_DIR / f"{name}.proto"),
        ],
        check=True,
        capture_output=True,
    )
    [compiled] = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    module: ModuleType = importlib.import_module(f"deletion.wire.proto.{name}_pb2")
    generated = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
    _without_json_names(compiled)
    assert compiled.name == f"{name}.proto"
    assert generated == compiled


def test_managed_ledger_info_vector() -> None:
    # ManagedLedgerInfo.ledgerInfo = field 1, LEN -> tag 0x0a, then length 4 and:
    #   LedgerInfo.ledgerId = field 1, varint -> 08 05
    #   LedgerInfo.entries  = field 2, varint -> 10 0a
    vector = bytes.fromhex("0a040805100a")
    info = ManagedLedgerInfo()
    info.ledgerInfo.add(ledgerId=5, entries=10)
    assert info.SerializeToString() == vector
    parsed = ManagedLedgerInfo.FromString(vector)
    assert [(li.ledgerId, li.entries) for li in parsed.ledgerInfo] == [(5, 10)]


def test_managed_ledger_info_with_two_ledgers_and_a_large_id() -> None:
    # Repeated fields are one tag each. 2**31 = 0x80000000 as a varint, 7 bits at a time
    # from the least significant: 80 80 80 80 08.
    vector = bytes.fromhex("0a0208010a06088080808008")
    info = ManagedLedgerInfo()
    info.ledgerInfo.add(ledgerId=1)
    info.ledgerInfo.add(ledgerId=2**31)
    assert info.SerializeToString() == vector
    assert [li.ledgerId for li in ManagedLedgerInfo.FromString(vector).ledgerInfo] == [1, 2**31]


def test_managed_cursor_info_vector() -> None:
    # cursorsLedgerId = field 1, varint -> 08, value 12 -> 0c.
    assert ManagedCursorInfo(cursorsLedgerId=12).SerializeToString() == bytes.fromhex("080c")
    assert ManagedCursorInfo.FromString(bytes.fromhex("080c")).cursorsLedgerId == 12


def test_managed_cursor_info_minus_one() -> None:
    # int64 -1 is two's complement as a 10-byte varint: nine ff-continued groups, then 01.
    vector = bytes.fromhex("08" + "ff" * 9 + "01")
    assert ManagedCursorInfo(cursorsLedgerId=-1).SerializeToString() == vector
    assert ManagedCursorInfo.FromString(vector).cursorsLedgerId == -1


def test_schema_locator_vector() -> None:
    # SchemaLocator.info = field 1, LEN -> 0a, length 10 of an IndexEntry:
    #   version  = field 1, varint -> 08 00
    #   position = field 2, LEN -> 12, length 4: ledgerId 1 -> 08 07, entryId 2 -> 10 00
    #   hash     = field 3, LEN -> 1a, length 0
    vector = bytes.fromhex("0a0a08001204080710001a00")
    locator = SchemaLocator()
    locator.info.version = 0
    locator.info.position.ledgerId = 7
    locator.info.position.entryId = 0
    locator.info.hash = b""
    assert locator.SerializeToString() == vector
    parsed = SchemaLocator.FromString(vector)
    assert parsed.info.position.ledgerId == 7
    assert list(parsed.index) == []
