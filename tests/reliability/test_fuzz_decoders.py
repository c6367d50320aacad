"""Hostile bytes for every decoder: typed errors only, no hang, bounded memory.

Structure-aware: besides arbitrary bytes, valid encodings mutated (bit flips, splices,
truncations, huge varints where lengths and counts go), compression headers that lie,
compression bombs, BookKeeper headers over garbage, chunk footers with JSON tricks, and
topic names built to escape their metadata paths. LEDGER_JANITOR_LONG_TESTS=1 runs a
hundred times as many examples.
"""

from __future__ import annotations

import io
import json
import zlib

import cramjam
import lz4.block
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import DecodeError
from deletion.domain import message
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path, schema_path
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.metadata_codec import MAX_UNCOMPRESSED, wrap
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from deletion.wire.proto.ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedLedgerInfo,
    ManagedLedgerInfoMetadata,
    PositionInfo,
)
from tests.reliability.sandbox import Sandbox
from tests.reliability.support import scaled

pytestmark = pytest.mark.timeout(scaled(120, 1800))

EXAMPLES = scaled(150, 15_000)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HUGE_VARINTS = [
    b"\xff\xff\xff\xff\x0f",  # 2^32 - 1
    b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # zigzag 2^63 - 1
    b"\xff" * 10 + b"\x01",  # over-long
    b"\x80" * 20 + b"\x01",  # very over-long
]


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    """A valid encoding, then a few random edits."""
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "varint", "truncate", "dup"]))
        at = draw(st.integers(0, len(data)))
        if kind == "flip" and data:
            data[min(at, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "varint":
            data[at : at + draw(st.integers(0, 2))] = draw(st.sampled_from(HUGE_VARINTS))
        elif kind == "truncate":
            del data[at:]
        elif kind == "dup":
            data[at:at] = data[at : at + draw(st.integers(1, 16))]
    return bytes(data)


# --- the Avro message ----------------------------------------------------------------------

names = st.text(st.sampled_from("abcXYZ09-_.:=%/\\ \x00\u0456\u00e9"), min_size=1, max_size=12)


@st.composite
def infos(draw: st.DrawFn) -> PendingDeleteLedgerInfo:
    offload = draw(st.booleans())
    return PendingDeleteLedgerInfo(
        TopicName(NamespaceName("tenant", "ns"), draw(names.filter(lambda n: "/" not in n))),
        draw(st.sampled_from(list(LedgerComponent))),
        LedgerType.OFFLOAD_LEDGER if offload else LedgerType.LEDGER,
        draw(st.integers(0, 2**63 - 1)),
        context=ManagedLedgerInfo.LedgerInfo(ledgerId=1).SerializeToString() if offload else None,
        check_ledger_still_in_use=draw(st.booleans()),
        properties=draw(st.dictionaries(names, names, max_size=3)),
    )


encoded_infos = infos().map(message.encode)


@FUZZ
@given(st.one_of(st.binary(max_size=400), mutated(encoded_infos)))
def test_avro_decoder(sandbox: Sandbox, data: bytes) -> None:
    outcome = sandbox.check("avro-message", data)
    if isinstance(outcome.value, PendingDeleteLedgerInfo):  # what decodes re-encodes stably
        assert message.decode(message.encode(outcome.value)) == outcome.value


# --- Pulsar's metadata, compressed or not ------------------------------------------------

ledger_lists = st.lists(st.integers(0, 2**63 - 1), max_size=40).map(
    lambda ids: ManagedLedgerInfo(
        ledgerInfo=[ManagedLedgerInfo.LedgerInfo(ledgerId=i) for i in ids]
    ).SerializeToString()
)
cursor_infos = st.integers(-1, 2**63 - 1).map(
    lambda i: ManagedCursorInfo(cursorsLedgerId=i).SerializeToString()
)
codecs = st.sampled_from(
    [CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD, CompressionType.SNAPPY]
)
sizes = st.one_of(
    st.integers(0, 4096),
    st.sampled_from([MAX_UNCOMPRESSED, MAX_UNCOMPRESSED + 1, 2**31 - 1, -1, -(2**31)]),
)


def _varint(value: int) -> bytes:
    value &= 2**64 - 1  # protobuf writes a negative int32 as ten bytes
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if not value:
            return bytes(out + bytes([byte]))
        out.append(byte | 0x80)


def _compressed(body: bytes, codec: CompressionType.ValueType) -> bytes:
    wrapped = wrap(body, codec)
    return wrapped[6 + int.from_bytes(wrapped[2:6], "big") :]


@st.composite
def lying_headers(draw: st.DrawFn) -> bytes:
    """A compression header whose claims (codec, size, header length) may all be false."""
    body = draw(st.one_of(st.binary(max_size=200), ledger_lists))
    if draw(st.booleans()):
        body = _compressed(body, draw(codecs))
    codec = draw(st.integers(0, 20))  # 5 and above name no codec
    raw = b"\x08" + _varint(codec) + b"\x10" + _varint(draw(sizes))
    declared = draw(st.one_of(st.just(len(raw)), st.integers(-(2**31), 2**31 - 1)))
    return b"\x47\x78" + declared.to_bytes(4, "big", signed=True) + raw + body


metadata_inputs = st.one_of(
    st.binary(max_size=300),
    mutated(ledger_lists),
    mutated(cursor_infos),
    st.tuples(ledger_lists, codecs).map(lambda args: wrap(*args)),
    mutated(st.tuples(ledger_lists, codecs).map(lambda args: wrap(*args))),
    lying_headers(),
)


@FUZZ
@given(metadata_inputs)
def test_metadata_decoders(sandbox: Sandbox, data: bytes) -> None:
    for name in ("managed-ledger-info", "managed-cursor-info", "schema-locator"):
        sandbox.check(name, data)
    sandbox.check("cursor-compression", data)


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["lz4", "zlib", "zstd", "snappy"])
def test_cursor_state_claims_are_not_allocated_on_trust(sandbox: Sandbox, codec: int) -> None:
    """Cursor state may claim up to 2 GiB (int32): a claim the bytes cannot hold is refused
    without allocating it (LZ4 and ZSTD used to allocate the full claim up front)."""
    body = _compressed(b"hello world" * 3, CompressionType.ValueType(codec))
    raw = b"\x08" + _varint(codec) + b"\x10" + _varint(2**31 - 1)
    data = b"\x47\x78" + len(raw).to_bytes(4, "big") + raw + body
    outcome = sandbox.run("cursor-compression", data)
    assert isinstance(outcome.error, DecodeError)
    assert outcome.resident_bytes < 4 << 20, outcome
    assert outcome.reserved_bytes < 4 << 20, outcome


def _bomb(codec: CompressionType.ValueType, expanded: int) -> bytes:
    """A small value that expands to `expanded` bytes while its header claims 100."""
    zeros = b"\0" * expanded
    if codec == CompressionType.ZSTD:
        out = io.BytesIO()  # a frame that declares its (huge) size, which decompress() trusts
        with zstandard.ZstdCompressor(level=3).stream_writer(  # Pulsar's level; 32 KB too
            out, size=expanded, closefd=False
        ) as writer:
            for _ in range(expanded // (1 << 20)):
                writer.write(b"\0" * (1 << 20))
        body = out.getvalue()
    elif codec == CompressionType.LZ4:
        body = bytes(lz4.block.compress(zeros, store_size=False))
    elif codec == CompressionType.ZLIB:
        body = zlib.compress(zeros, 9)
    else:
        body = bytes(cramjam.snappy.compress_raw(zeros))
    header = ManagedLedgerInfoMetadata(compressionType=codec, uncompressedSize=100)
    raw = header.SerializeToString()
    return b"\x47\x78" + len(raw).to_bytes(4, "big") + raw + body


@pytest.mark.parametrize(
    ("codec", "expanded"),
    [
        (CompressionType.ZSTD, 1 << 30),  # a 32 KB value: decompress() used to allocate 1 GiB
        (CompressionType.LZ4, 16 << 20),
        (CompressionType.ZLIB, 16 << 20),
        (CompressionType.SNAPPY, 16 << 20),
    ],
    ids=["zstd", "lz4", "zlib", "snappy"],
)
def test_compression_bombs_are_refused_in_bounded_memory(
    sandbox: Sandbox, codec: CompressionType.ValueType, expanded: int
) -> None:
    data = _bomb(codec, expanded)
    outcome = sandbox.run("managed-ledger-info", data)
    assert isinstance(outcome.error, DecodeError)
    # What a child adds just by running (pages of the libraries it touches) is about 1 MiB;
    # the expanded output would be 16 MiB or more. Raw Snappy used to be decoded whole
    # before its length was compared with the header's.
    assert outcome.resident_bytes < 2 << 20, (len(data), outcome)
    # The ZSTD decoder reserves the window the frame asks for (2 MiB here), mostly untouched.
    assert outcome.reserved_bytes < 16 << 20, (len(data), outcome)
    assert outcome.seconds < 5


# --- BookKeeper ledger metadata ----------------------------------------------------------


def _ledger_metadata(custom: dict[str, bytes]) -> bytes:
    metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=0, ackQuorumSize=2)
    metadata.state = LedgerMetadataFormat.CLOSED
    metadata.segment.add(ensembleMember=["b:3181"], firstEntryId=0)
    for key, value in custom.items():
        metadata.customMetadata.add(key=key, value=value)
    return bk.encode_v3(metadata)


valid_v3 = st.dictionaries(names, st.binary(max_size=20), max_size=4).map(_ledger_metadata)
headers = st.sampled_from([bk.HEADER_PREFIX + b"3\n", bk.HEADER_PREFIX + b"2\n", b""])


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=300),
        mutated(valid_v3),
        st.tuples(headers, st.binary(max_size=300)).map(b"".join),
        st.tuples(headers, st.text(max_size=300).map(str.encode)).map(b"".join),
        st.tuples(
            headers,
            st.lists(
                st.sampled_from(
                    ["quorumSize: 2", "segment {", "}", "customMetadata {", 'key: "a"']
                ),
                max_size=30,
            ).map(lambda lines: "\n".join(lines).encode()),
        ).map(b"".join),
    )
)
def test_bookkeeper_metadata_decoder(sandbox: Sandbox, data: bytes) -> None:
    sandbox.check("bookkeeper-metadata", data)


# --- cursor state: PositionInfo, ManagedCursorInfo, chunk footers ------------------------


@st.composite
def position_infos(draw: st.DrawFn) -> bytes:
    info = PositionInfo(ledgerId=draw(st.integers(0, 2**40)), entryId=draw(st.integers(-1, 2**40)))
    for _ in range(draw(st.integers(0, 20))):
        low = draw(st.integers(0, 2**20))
        info.individualDeletedMessages.add(
            lowerEndpoint={"ledgerId": 1, "entryId": low},
            upperEndpoint={"ledgerId": 1, "entryId": low + draw(st.integers(1, 100))},
        )
    for _ in range(draw(st.integers(0, 3))):
        info.individualDeletedMessageRanges.add(
            key=draw(st.integers(0, 2**40)),
            values=draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=8)),
        )
    return info.SerializeToString()


@FUZZ
@given(st.one_of(st.binary(max_size=300), mutated(position_infos())))
def test_cursor_state_decoders(sandbox: Sandbox, data: bytes) -> None:
    sandbox.check("position-info", data)
    sandbox.check("cursor-info", data)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True),
        st.text(max_size=5),
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
footers = st.one_of(
    st.fixed_dictionaries({"numParts": json_values, "length": json_values}).map(json.dumps),
    json_values.map(json.dumps),
    st.sampled_from(['{"numParts":1e999,"length":1}', '{"numParts":' + "9" * 300 + ',"length":1}']),
).map(str.encode)


@FUZZ
@given(st.one_of(footers, st.binary(max_size=300).map(lambda b: b"{" + b)))
def test_chunk_footer(sandbox: Sandbox, data: bytes) -> None:
    sandbox.check("chunk-footer", data)


@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=40), footers), min_size=0, max_size=6).map(b"\0".join))
def test_chunk_sequences(sandbox: Sandbox, data: bytes) -> None:
    sandbox.check("chunk-sequence", data)


# --- topic names with path tricks ----------------------------------------------------------

path_text = st.lists(
    st.sampled_from([*"ab./%2Ff:\\\x00 -=", "..", "://", "persistent", "\u0456", "\u2024"]),
    max_size=20,
).map("".join)


@FUZZ
@given(st.one_of(path_text, path_text.map(lambda t: "tenant/ns/" + t)))
def test_topic_names_never_escape_their_metadata_paths(text: str) -> None:
    try:
        topic = TopicName.parse(text)
    except DecodeError:
        return
    for path, depth, root in (
        (managed_ledger_path(topic), 5, ["managed-ledgers"]),
        (schema_path(topic), 4, ["schemas"]),
    ):
        segments = path.split("/")[1:]
        assert len(segments) == depth, path
        assert segments[: len(root)] == root
        assert segments[1:3] == [topic.namespace.tenant, topic.namespace.namespace]
        assert all(s and s not in (".", "..") for s in segments), path
        assert path.isascii() and "\x00" not in path
