"""BookKeeper's ledger-metadata znodes: the hierarchical path layout and formats 1 to 3.

Read as `LedgerMetadataSerDe.parseConfig` reads them (apache/bookkeeper,
bookkeeper-server/src/main/java/org/apache/bookkeeper/meta/LedgerMetadataSerDe.java):
`readHeader` takes the version as `Integer.parseInt` of the digits before the newline;
`parseVersion3Config` reads one varint-delimited message and ignores what follows it;
`parseVersion2Config` is protobuf text; `parseVersion1Config` is the 4.0/4.1 line format.
"""

from __future__ import annotations

import re

from google.protobuf import text_format
from google.protobuf.internal.decoder import _DecodeVarint32  # type: ignore[attr-defined]
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from google.protobuf.message import DecodeError as ProtobufDecodeError

from core.errors import DecodeError
from deletion.wire.proto import require_complete
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

INT_MAX = 2**31 - 1
LEDGER_NODE_PREFIX = "L"
HEADER_PREFIX = b"BookieMetadataFormatVersion\t"
# Znodes under the ledgers root that are not ledger buckets.
RESERVED_NODES = frozenset({"LAYOUT", "INSTANCEID", "available", "cookies", "underreplication"})


def ledger_path(ledger_id: int, root: str = "/ledgers") -> str:
    """The hybrid hierarchical layout: 2-4-4 below Integer.MAX_VALUE, 3-4-4-4-4 above."""
    if ledger_id < 0:
        raise ValueError(f"negative ledger id {ledger_id}")
    if ledger_id < INT_MAX:
        digits = f"{ledger_id:010d}"
        parts = [digits[0:2], digits[2:6], LEDGER_NODE_PREFIX + digits[6:10]]
    else:
        digits = f"{ledger_id:019d}"
        parts = [digits[0:3], digits[3:7], digits[7:11], digits[11:15]]
        parts.append(LEDGER_NODE_PREFIX + digits[15:19])
    return f"{root}/{'/'.join(parts)}"


def is_reserved(name: str) -> bool:
    return name in RESERVED_NODES or name.startswith("idgen")


# `ledger_path`'s two shapes (2-4-4 and 3-4-4-4-4 digits, the last part after the prefix).
_LEDGER_RELATIVE = re.compile(
    rf"[0-9]{{2}}/[0-9]{{4}}/{LEDGER_NODE_PREFIX}[0-9]{{4}}"
    rf"|[0-9]{{3}}/[0-9]{{4}}/[0-9]{{4}}/[0-9]{{4}}/{LEDGER_NODE_PREFIX}[0-9]{{4}}"
)


def ledger_id_of(relative_path: str) -> int | None:
    """The id a hierarchical path below the root names, or None if it names no ledger.
    Asked of every znode an audit lists: one match, then the digits."""
    relative = relative_path.strip("/")
    if _LEDGER_RELATIVE.fullmatch(relative) is None:
        return None
    return int(relative.replace("/", "").replace(LEDGER_NODE_PREFIX, ""))


def encode_v3(metadata: LedgerMetadataFormat) -> bytes:
    body = metadata.SerializeToString()
    length: bytes = _VarintBytes(len(body))
    return HEADER_PREFIX + b"3\n" + length + body


def decode(data: bytes) -> LedgerMetadataFormat:
    """Decode format version 3 (length-delimited protobuf), 2 (protobuf text) or 1 (lines)."""
    newline = data.find(b"\n")
    if not data.startswith(HEADER_PREFIX) or newline < 0:
        raise DecodeError("not BookKeeper ledger metadata: missing the format-version header")
    version = data[len(HEADER_PREFIX) : newline]
    body = data[newline + 1 :]
    metadata = LedgerMetadataFormat()
    try:
        number = int(version) if _JAVA_INT.fullmatch(version) else None
        if number == 3:
            length, start = _DecodeVarint32(body, 0)
            if start + length > len(body):
                raise DecodeError(f"metadata length {length} overruns {len(body) - start} bytes")
            # Java's readDelimited stops after the message: trailing bytes are not read.
            metadata.ParseFromString(body[start : start + length])
        elif number == 2:
            text_format.Parse(body.decode("utf-8"), metadata)
        elif number == 1:
            metadata = _decode_v1(body.decode("utf-8"))
        else:
            raise DecodeError(f"unsupported BookKeeper metadata format version {version!r}")
    except (ProtobufDecodeError, text_format.ParseError, UnicodeDecodeError, IndexError) as exc:
        raise DecodeError(f"corrupt BookKeeper ledger metadata: {exc}") from exc
    require_complete(metadata, "BookKeeper ledger metadata")
    return metadata


_JAVA_INT = re.compile(rb"[+-]?[0-9]{1,10}")
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_JAVA_LINE_END = re.compile(r"\r\n|\r|\n")  # BufferedReader.readLine's terminators
V1_CLOSED_TAG = "CLOSED"
V1_IN_RECOVERY_ENTRY_ID = -102


def _decode_v1(text: str) -> LedgerMetadataFormat:
    """Quorum, ensemble and length lines, then `firstEntry<TAB>bookie...` per ensemble, then
    `lastEntry<TAB>CLOSED` if closed (-102 for in recovery); lines after that are not read."""
    lines = _JAVA_LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # the terminator of the last line, not an empty line
    if len(lines) < 3:
        raise DecodeError("BookKeeper v1 metadata: fewer than the three size lines")
    quorum = _v1_number(lines[0], 2**31)
    metadata = LedgerMetadataFormat(
        quorumSize=quorum,
        ensembleSize=_v1_number(lines[1], 2**31),
        length=_v1_number(lines[2], 2**63),
        ackQuorumSize=quorum,
        lastEntryId=-1,
        state=LedgerMetadataFormat.OPEN,
    )
    for line in lines[3:]:
        # String.split drops trailing empty strings; a line without a tab has no parts[1].
        parts = line.split("\t")
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) < 2:
            raise DecodeError(f"BookKeeper v1 metadata: malformed line {line!r}")
        if parts[1] == V1_CLOSED_TAG:
            last = _v1_number(parts[0], 2**63)
            if last == V1_IN_RECOVERY_ENTRY_ID:
                metadata.state = LedgerMetadataFormat.IN_RECOVERY
            else:
                metadata.state, metadata.lastEntryId = LedgerMetadataFormat.CLOSED, last
            break
        segment = metadata.segment.add(firstEntryId=_v1_number(parts[0], 2**63))
        segment.ensembleMember.extend(parts[1:])
    return metadata


def _v1_number(text: str, bound: int) -> int:
    """Integer.parseInt / Long.parseLong: an optional sign and ASCII digits, in range."""
    value = int(text) if _JAVA_LONG.fullmatch(text) else None
    if value is None or not -bound <= value < bound:
        raise DecodeError(f"BookKeeper v1 metadata: {text!r} is not a number in range")
    return value


def custom_metadata(metadata: LedgerMetadataFormat) -> dict[str, bytes]:
    return {entry.key: entry.value for entry in metadata.customMetadata}
