"""`PendingDeleteLedgerInfo`, the phase-one message, and its Avro wire form."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from importlib import resources
from typing import Any

import fastavro

from ledger_janitor.errors import DecodeError

from .proto.ml_data_formats_pb2 import ManagedLedgerInfo
from .topics import TopicName

MAX_MESSAGE_BYTES = 64 * 1024
MAX_LEDGER_ID = 2**63 - 1


class LedgerComponent(str, Enum):
    MANAGED_LEDGER = "MANAGED_LEDGER"
    MANAGED_CURSOR = "MANAGED_CURSOR"
    SCHEMA_STORAGE = "SCHEMA_STORAGE"


class LedgerType(str, Enum):
    LEDGER = "LEDGER"
    OFFLOAD_LEDGER = "OFFLOAD_LEDGER"


@dataclass(frozen=True)
class PendingDeleteLedgerInfo:
    topic_name: TopicName
    ledger_component: LedgerComponent
    ledger_type: LedgerType
    ledger_id: int
    context: bytes | None = None
    check_ledger_still_in_use: bool = True
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 <= self.ledger_id <= MAX_LEDGER_ID:
            raise DecodeError(f"ledgerId out of range: {self.ledger_id}")
        if self.ledger_type is LedgerType.OFFLOAD_LEDGER and self.context is None:
            raise DecodeError("an OFFLOAD_LEDGER needs its LedgerInfo context")

    @property
    def ledger_info(self) -> ManagedLedgerInfo.LedgerInfo | None:
        """The decoded offload context, if any."""
        if self.context is None:
            return None
        info = ManagedLedgerInfo.LedgerInfo()
        try:
            info.ParseFromString(self.context)
        except Exception as exc:
            raise DecodeError(f"context is not a ManagedLedgerInfo.LedgerInfo: {exc}") from exc
        return info

    def describe(self) -> str:
        kind = f"{self.ledger_component.value} {self.ledger_type.value}"
        return f"{kind} {self.ledger_id} of {self.topic_name}"


def _load_schema() -> Any:
    text = resources.files("deletion").joinpath("pending_delete_ledger_info.avsc").read_text()
    return json.loads(text)


SCHEMA = fastavro.parse_schema(_load_schema())
# topicName, ledgerComponent, ledgerType and ledgerId, which a Java writer encodes first.
_HEAD = _load_schema()
_HEAD_SCHEMA = fastavro.parse_schema({**_HEAD, "fields": _HEAD["fields"][:4]})


def encode(info: PendingDeleteLedgerInfo) -> bytes:
    """Avro binary without container, as Pulsar's AVRO schema puts it in a message payload."""
    record = {
        "topicName": str(info.topic_name),
        "ledgerComponent": info.ledger_component.value,
        "ledgerType": info.ledger_type.value,
        "ledgerId": info.ledger_id,
        "context": info.context,
        "checkLedgerStillInUse": info.check_ledger_still_in_use,
        "properties": dict(info.properties),
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, record)
    return out.getvalue()


def decode(payload: bytes) -> PendingDeleteLedgerInfo:
    """Decode and validate; every malformed input raises DecodeError and nothing else."""
    if len(payload) > MAX_MESSAGE_BYTES:
        raise DecodeError(f"message of {len(payload)} bytes exceeds {MAX_MESSAGE_BYTES}")
    stream = io.BytesIO(payload)
    try:
        record = fastavro.schemaless_reader(stream, SCHEMA, None)
    except Exception as exc:  # fastavro signals bad bytes with many exception types
        raise DecodeError(
            f"not an Avro PendingDeleteLedgerInfo: {type(exc).__name__}: {exc}"
        ) from exc
    if stream.tell() != len(payload):
        raise DecodeError(f"{len(payload) - stream.tell()} trailing bytes after the record")
    if not isinstance(record, dict):
        raise DecodeError("not an Avro record")
    info = _from_record(record)
    # fastavro keeps the low 64 bits of an over-long varint (Java refuses one): a huge
    # ledgerId must not alias a small one, so the head must be encoded as Java would.
    head = io.BytesIO()
    fastavro.schemaless_writer(head, _HEAD_SCHEMA, record)
    if not payload.startswith(head.getvalue()):
        raise DecodeError(
            "non-canonical encoding of topicName, ledgerComponent, ledgerType or ledgerId"
        )
    return info


def _from_record(record: dict[str, Any]) -> PendingDeleteLedgerInfo:
    missing = [
        k for k in ("topicName", "ledgerComponent", "ledgerType", "ledgerId") if record[k] is None
    ]
    if missing:
        raise DecodeError(f"required fields are null: {', '.join(missing)}")
    info = PendingDeleteLedgerInfo(
        topic_name=TopicName.parse(record["topicName"]),
        ledger_component=LedgerComponent(record["ledgerComponent"]),
        ledger_type=LedgerType(record["ledgerType"]),
        ledger_id=record["ledgerId"],
        context=record["context"],
        check_ledger_still_in_use=record["checkLedgerStillInUse"],
        properties=record["properties"] or {},
    )
    _ = info.ledger_info  # a corrupt context is a decode error now, not at deletion time
    return info
