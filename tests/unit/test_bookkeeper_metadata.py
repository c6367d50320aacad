"""BookKeeper's ledger metadata in formats 1 to 3 as Java reads it, fuzzed, and its znode paths."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.scan.ledgers import ledger_row
from core.errors import DecodeError
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from tests.unit.wire_vectors import (
    BODY_V3,
    HEADER_V3,
    VECTOR_V1,
    VECTOR_V3,
    _decode_or_decode_error,
)


def test_bookkeeper_v3_vector_decodes() -> None:
    assert len(BODY_V3) == 0x1F
    metadata = bk.decode(VECTOR_V3)
    assert (metadata.quorumSize, metadata.ensembleSize, metadata.length) == (2, 2, 0)
    assert metadata.state == LedgerMetadataFormat.CLOSED
    assert not metadata.HasField("ctime")
    assert bk.custom_metadata(metadata) == {"application": b"pulsar"}


def test_bookkeeper_v3_encode_matches_the_vector() -> None:
    metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=0)
    metadata.state = LedgerMetadataFormat.CLOSED
    metadata.customMetadata.add(key="application", value=b"pulsar")
    assert bk.encode_v3(metadata) == VECTOR_V3


def test_bookkeeper_v3_length_takes_two_varint_bytes_above_127() -> None:
    metadata = LedgerMetadataFormat(quorumSize=1, ensembleSize=1, length=0)
    metadata.customMetadata.add(key="pulsar/managed-ledger", value=b"x" * 200)
    encoded = bk.encode_v3(metadata)
    body = metadata.SerializeToString()
    assert len(body) >= 128
    # varint32: low 7 bits with the continuation bit, then the rest.
    assert encoded[len(HEADER_V3) : len(HEADER_V3) + 2] == bytes(
        [(len(body) & 0x7F) | 0x80, len(body) >> 7]
    )
    assert bk.decode(encoded) == metadata


def test_bookkeeper_v2_text_format_decodes() -> None:
    text = (
        b"BookieMetadataFormatVersion\t2\n"
        b"quorumSize: 2\nensembleSize: 3\nlength: 100\nlastEntryId: 9\nstate: CLOSED\n"
        b'segment {\n  ensembleMember: "bookie-1:3181"\n  firstEntryId: 0\n}\n'
        b'customMetadata {\n  key: "application"\n  value: "pulsar"\n}\n'
        b'customMetadata {\n  key: "component"\n  value: "managed-ledger"\n}\n'
        b"ctime: 1700000000000\n"
    )
    metadata = bk.decode(text)
    assert (metadata.ensembleSize, metadata.lastEntryId, metadata.ctime) == (3, 9, 1700000000000)
    assert list(metadata.segment[0].ensembleMember) == ["bookie-1:3181"]
    assert bk.custom_metadata(metadata) == {
        "application": b"pulsar",
        "component": b"managed-ledger",
    }


def test_bookkeeper_v3_bytes_after_the_message_are_ignored_as_java_does() -> None:
    # readDelimited reads the varint length and that many bytes; parseConfig reads no more.
    assert bk.decode(VECTOR_V3 + b"\x00\xff trailing") == bk.decode(VECTOR_V3)


def test_bookkeeper_version_is_read_as_integer_parse_int_reads_it() -> None:
    assert bk.decode(b"BookieMetadataFormatVersion\t03\n" + VECTOR_V3[len(HEADER_V3) :])


def test_bookkeeper_v1_closed_ledger() -> None:
    metadata = bk.decode(VECTOR_V1)
    assert (metadata.quorumSize, metadata.ackQuorumSize, metadata.ensembleSize) == (2, 2, 3)
    assert (metadata.length, metadata.lastEntryId) == (1024, 41)
    assert metadata.state == LedgerMetadataFormat.CLOSED
    assert [s.firstEntryId for s in metadata.segment] == [0, 20]
    assert list(metadata.segment[1].ensembleMember) == ["b1:3181", "b4:3181", "b3:3181"]
    assert not metadata.HasField("ctime") and bk.custom_metadata(metadata) == {}


@pytest.mark.parametrize(
    ("tail", "state"),
    [
        (b"0\tb1:3181\n", LedgerMetadataFormat.OPEN),
        (b"0\tb1:3181\r\n-102\tCLOSED\r\n", LedgerMetadataFormat.IN_RECOVERY),
        (b"9\tCLOSED\nnot read: parsing stops at CLOSED", LedgerMetadataFormat.CLOSED),
    ],
)
def test_bookkeeper_v1_states(tail: bytes, state: int) -> None:
    metadata = bk.decode(b"BookieMetadataFormatVersion\t1\n1\n1\n0\n" + tail)
    assert metadata.state == state


@pytest.mark.parametrize(
    "body",
    [b"", b"2\n3\n", b"2\nthree\n0\n", b"2\n3\n0\nno-tab\n", b"2\n3\n0\nx\tb1\n"],
    ids=["empty", "two-lines", "not-a-number", "no-tab", "bad-first-entry"],
)
def test_bookkeeper_v1_garbage(body: bytes) -> None:
    with pytest.raises(DecodeError):
        bk.decode(b"BookieMetadataFormatVersion\t1\n" + body)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        BODY_V3,
        b"BookieMetadataFormatVersion\t3",  # no newline
        b"BookieMetadataFormatVersion 3\n" + bytes([len(BODY_V3)]) + BODY_V3,
        b"bookieMetadataFormatVersion\t3\n" + bytes([len(BODY_V3)]) + BODY_V3,
        b"\nBookieMetadataFormatVersion\t3\n" + bytes([len(BODY_V3)]) + BODY_V3,
    ],
    ids=["empty", "no-header", "no-newline", "space", "lower-case", "leading-newline"],
)
def test_bookkeeper_bad_header(data: bytes) -> None:
    with pytest.raises(DecodeError, match="header"):
        bk.decode(data)


@pytest.mark.parametrize("version", [b"0", b"4", b"", b"3 ", b"3.0", b"\xff"])
def test_bookkeeper_bad_version(version: bytes) -> None:
    data = b"BookieMetadataFormatVersion\t" + version + b"\n" + bytes([len(BODY_V3)]) + BODY_V3
    with pytest.raises(DecodeError, match="version"):
        bk.decode(data)


@pytest.mark.parametrize("delta", [-1, 1, 5, -31])
def test_bookkeeper_length_mismatch(delta: int) -> None:
    # Longer than the bytes: truncated. Shorter: the message read is cut mid-field (-1) or
    # lacks its required fields (-31), though what follows it would be ignored.
    data = HEADER_V3 + bytes([len(BODY_V3) + delta]) + BODY_V3
    with pytest.raises(DecodeError):
        bk.decode(data)


@pytest.mark.parametrize(
    "data",
    [
        HEADER_V3,  # no length at all
        HEADER_V3 + b"\xff\xff\xff",  # truncated varint
        HEADER_V3 + b"\x03\xff\xff\xff",  # garbage body of the right length
        HEADER_V3 + b"\x02\x0a\x05",  # truncated field
        HEADER_V3 + bytes([len(BODY_V3) - 1]) + BODY_V3[:-1],  # truncated value, length agrees
        b"BookieMetadataFormatVersion\t2\n\xff\xfe",  # not UTF-8
        b"BookieMetadataFormatVersion\t2\nquorumSize: two\n",
        b"BookieMetadataFormatVersion\t2\nnoSuchField: 1\n",
        b"BookieMetadataFormatVersion\t2\nquorumSize: 99999999999\n",
    ],
)
def test_bookkeeper_garbage(data: bytes) -> None:
    with pytest.raises(DecodeError):
        bk.decode(data)


@pytest.mark.parametrize(
    "data",
    [
        HEADER_V3 + b"\x00",
        HEADER_V3 + bytes.fromhex("19") + BODY_V3[6:],  # 25 bytes: state, customMetadata
        b"BookieMetadataFormatVersion\t2\n",
        b'BookieMetadataFormatVersion\t2\ncustomMetadata {\n key: "application"\n}\n',
    ],
    ids=["v3-empty", "v3-custom-metadata-only", "v2-empty", "v2-custom-metadata-only"],
)
def test_bookkeeper_missing_required_fields(data: bytes) -> None:
    with pytest.raises(DecodeError):
        bk.decode(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100))
def test_fuzz_arbitrary_bytes_only_decode_error(data: bytes) -> None:
    _decode_or_decode_error(data)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([b"1", b"2", b"3", b"4", b""]), st.binary(max_size=100))
def test_fuzz_after_a_header_only_decode_error(version: bytes, body: bytes) -> None:
    _decode_or_decode_error(b"BookieMetadataFormatVersion\t" + version + b"\n" + body)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_fuzz_v2_text_only_decode_error(text: str) -> None:
    _decode_or_decode_error(b"BookieMetadataFormatVersion\t2\n" + text.encode())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), min_size=1, max_size=3),
    st.integers(0, 10),
)
def test_fuzz_mutated_v3_vector_only_decode_error(flips: list[tuple[int, int]], cut: int) -> None:
    mutated = bytearray(VECTOR_V3)
    for index, value in flips:
        mutated[index % len(mutated)] = value
    _decode_or_decode_error(bytes(mutated[: len(mutated) - cut]))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 2**63 - 1),
    st.dictionaries(st.text(max_size=30), st.binary(max_size=300), max_size=5),
    st.none() | st.integers(0, 2**63 - 1),
)
def test_v3_round_trip(
    quorum: int, ensemble: int, length: int, custom: dict[str, bytes], ctime: int | None
) -> None:
    metadata = LedgerMetadataFormat(quorumSize=quorum, ensembleSize=ensemble, length=length)
    for key, value in custom.items():
        metadata.customMetadata.add(key=key, value=value)
    if ctime is not None:
        metadata.ctime = ctime
    decoded = bk.decode(bk.encode_v3(metadata))
    assert decoded == metadata
    assert bk.custom_metadata(decoded) == custom


@pytest.mark.parametrize(
    ("ledger_id", "path"),
    [
        (0, "/ledgers/00/0000/L0000"),
        (1, "/ledgers/00/0000/L0001"),
        (12345678, "/ledgers/00/1234/L5678"),
        (2147483646, "/ledgers/21/4748/L3646"),
        # Integer.MAX_VALUE itself already uses the long layout: %019d split 3-4-4-4-4.
        (2147483647, "/ledgers/000/0000/0021/4748/L3647"),
        (2**40, "/ledgers/000/0001/0995/1162/L7776"),
        (2**63 - 1, "/ledgers/922/3372/0368/5477/L5807"),
    ],
)
def test_ledger_path(ledger_id: int, path: str) -> None:
    assert bk.ledger_path(ledger_id) == path


@pytest.mark.parametrize(
    "ledger_id", [0, 1, 9999, 10_000, 12345678, 2**31 - 2, 2**31 - 1, 2**63 - 1]
)
def test_ledger_id_of_reads_back_the_path(ledger_id: int) -> None:
    assert bk.ledger_id_of(bk.ledger_path(ledger_id, "")) == ledger_id
    assert bk.ledger_id_of(bk.ledger_path(ledger_id, "")[1:]) == ledger_id


@given(st.integers(0, 2**63 - 1))
def test_ledger_id_of_inverts_ledger_path(ledger_id: int) -> None:
    assert bk.ledger_id_of(bk.ledger_path(ledger_id, "")) == ledger_id


@pytest.mark.parametrize(
    "relative",
    [
        "",
        "/",
        "/00",
        "/00/0000",
        "/00/0000/0001",  # no L
        "/00/0000/X0001",
        "/00/0000/L00a1",
        "/0/0000/L0001",  # widths 2-4-4 only
        "/00/000/L0001",
        "/00/0000/L001",
        "/00/0000/L00001",
        "/00/0000/L0001X",  # a stray character, not stripped away
        "X/00/0000/L0001",
        "/00/00000/L001",  # the right digit count, split wrongly
        "/00/0000/L0001/extra",
        "/00/0000/0000/L0001",
        "/000/0000/0000/0000/0000",  # no L
        "/000/0000/0000/0000/L000",
        "/000/0000/0000/0000/L00000",
        "/0000/0000/0000/0000/L000",
        "/000/0000/0000/0000/L00-1",
    ],
)
def test_ledger_id_of_refuses_what_names_no_ledger(relative: str) -> None:
    assert bk.ledger_id_of(relative) is None


def test_ledger_path_under_another_root() -> None:
    assert bk.ledger_path(1, "/chroot/ledgers") == "/chroot/ledgers/00/0000/L0001"


def test_ledger_path_rejects_negative_ids() -> None:
    with pytest.raises(ValueError, match="negative"):
        bk.ledger_path(-1)


@pytest.mark.parametrize(
    "name",
    ["LAYOUT", "INSTANCEID", "available", "cookies", "underreplication", "idgen", "idgen-long"],
)
def test_reserved_nodes(name: str) -> None:
    assert bk.is_reserved(name)


@pytest.mark.parametrize("name", ["00", "000", "L0001", "0021", "layout", "ledgers"])
def test_bucket_nodes_are_not_reserved(name: str) -> None:
    assert not bk.is_reserved(name)


def test_the_audit_inventory_reads_the_same_formats() -> None:
    # A v1 ledger is readable (no custom metadata: not Pulsar's), not "unreadable" (None).
    assert ledger_row(7, VECTOR_V1, 5) == (7, 5, {}, 1024)
    assert ledger_row(8, VECTOR_V3 + b"\x00trailing", 5) == (8, 5, {"application": "pulsar"}, 0)
