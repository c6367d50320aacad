"""BookKeeper's ledger-metadata znodes: the hierarchical path layout and the v2/v3 formats."""

from __future__ import annotations

from google.protobuf import text_format
from google.protobuf.internal.decoder import _DecodeVarint32  # type: ignore[attr-defined]
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from google.protobuf.message import DecodeError as ProtobufDecodeError

from ledger_janitor.errors import DecodeError

from ..proto import require_complete
from ..proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

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


def ledger_id_of(relative_path: str) -> int | None:
    """The id a hierarchical path below the root names, or None if it names no ledger."""
    parts = relative_path.strip("/").split("/")
    if len(parts) not in (3, 5) or not parts[-1].startswith(LEDGER_NODE_PREFIX):
        return None
    digits = "".join(parts[:-1]) + parts[-1][len(LEDGER_NODE_PREFIX) :]
    widths = (2, 4, 4) if len(parts) == 3 else (3, 4, 4, 4, 4)
    if not digits.isdigit() or [len(p) for p in parts[:-1]] + [len(parts[-1]) - 1] != list(widths):
        return None
    return int(digits)


def encode_v3(metadata: LedgerMetadataFormat) -> bytes:
    body = metadata.SerializeToString()
    length: bytes = _VarintBytes(len(body))
    return HEADER_PREFIX + b"3\n" + length + body


def decode(data: bytes) -> LedgerMetadataFormat:
    """Decode format version 3 (length-delimited protobuf) or 2 (protobuf text)."""
    newline = data.find(b"\n")
    if not data.startswith(HEADER_PREFIX) or newline < 0:
        raise DecodeError("not BookKeeper ledger metadata: missing the format-version header")
    version = data[len(HEADER_PREFIX) : newline]
    body = data[newline + 1 :]
    metadata = LedgerMetadataFormat()
    try:
        if version == b"3":
            length, start = _DecodeVarint32(body, 0)
            if start + length != len(body):
                raise DecodeError(
                    f"metadata length {length} does not match {len(body) - start} bytes"
                )
            metadata.ParseFromString(body[start:])
        elif version == b"2":
            text_format.Parse(body.decode("utf-8"), metadata)
        else:
            raise DecodeError(f"unsupported BookKeeper metadata format version {version!r}")
    except (ProtobufDecodeError, text_format.ParseError, UnicodeDecodeError, IndexError) as exc:
        raise DecodeError(f"corrupt BookKeeper ledger metadata: {exc}") from exc
    require_complete(metadata, "BookKeeper ledger metadata")
    return metadata


def custom_metadata(metadata: LedgerMetadataFormat) -> dict[str, bytes]:
    return {entry.key: entry.value for entry in metadata.customMetadata}
