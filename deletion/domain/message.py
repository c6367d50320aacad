"""`PendingDeleteLedgerInfo`, the phase-one message, and its Avro wire form."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from importlib import resources
from typing import Any

import fastavro

from core.errors import DecodeError
from deletion.domain.topics import TopicName
from deletion.wire import pending_delete_avro
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

MAX_MESSAGE_BYTES = 64 * 1024
MAX_LEDGER_ID = 2**63 - 1


class LedgerComponent(str, Enum):
    MANAGED_LEDGER = "MANAGED_LEDGER"
    MANAGED_CURSOR = "MANAGED_CURSOR"
    SCHEMA_STORAGE = "SCHEMA_STORAGE"


class LedgerType(str, Enum):
    LEDGER = "LEDGER"
    OFFLOAD_LEDGER = "OFFLOAD_LEDGER"


# The record's `properties` key naming a kind of ledger that `ledgerComponent` cannot: an Avro
# enum cannot grow a symbol without every reader that lacks it failing on the message (Java's
# `Schema.AVRO(PendingDeleteLedgerInfo.class)` included), while a map entry is read by all.
KIND_PROPERTY = "ledgerKind"


class LedgerKind(str, Enum):
    """A ledger Pulsar makes besides a topic's data, cursors and schemas, named in the record's
    properties (KIND_PROPERTY), each with the component it is sent under. That component is
    chosen so that a reader that does not know the kind (an older ledger-janitor, or any peer
    that checks the ledger's owner as PIP-186 does) refuses the message rather than deletes:
    the ledger's own metadata says `component=compacted-ledger` or `delayed-index-bucket`,
    never the `managed-ledger` that component's check expects (decision.check_ownership)."""

    COMPACTED_LEDGER = "COMPACTED_LEDGER"  # AbstractTwoPhaseCompactor's compacted view
    DELAYED_INDEX_BUCKET = "DELAYED_INDEX_BUCKET"  # a sealed delayed-delivery bucket snapshot

    @property
    def component(self) -> LedgerComponent:
        if self is LedgerKind.COMPACTED_LEDGER:
            return LedgerComponent.MANAGED_LEDGER  # a copy of the topic's data
        return LedgerComponent.MANAGED_CURSOR  # a subscription's state


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
        kind = self.kind  # an unknown kind is a decode error
        if kind is not None and (
            self.ledger_component is not kind.component or self.ledger_type is not LedgerType.LEDGER
        ):
            raise DecodeError(
                f"a {kind.value} is sent as {kind.component.value} LEDGER, "
                f"not {self.ledger_component.value} {self.ledger_type.value}"
            )

    @property
    def kind(self) -> LedgerKind | None:
        """The kind the properties name (KIND_PROPERTY); None: the component's own."""
        text = self.properties.get(KIND_PROPERTY)
        if text is None:
            return None
        try:
            return LedgerKind(text)
        except ValueError:
            known = ", ".join(kind.value for kind in LedgerKind)
            raise DecodeError(f"unknown {KIND_PROPERTY} {text!r} (known: {known})") from None

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
        named = self.kind
        kind = named.value if named else f"{self.ledger_component.value} {self.ledger_type.value}"
        return f"{kind} {self.ledger_id} of {self.topic_name}"


def of_kind(
    topic: TopicName,
    kind: LedgerKind,
    ledger_id: int,
    check_ledger_still_in_use: bool = True,
    properties: Mapping[str, str] | None = None,
) -> PendingDeleteLedgerInfo:
    """A pending deletion of a ledger of `kind`: sent as its component, the kind in
    properties (the one place that says how a kind rides in Java's schema)."""
    return PendingDeleteLedgerInfo(
        topic,
        kind.component,
        LedgerType.LEDGER,
        ledger_id,
        check_ledger_still_in_use=check_ledger_still_in_use,
        properties={**(properties or {}), KIND_PROPERTY: kind.value},
    )


def _load_schema(name: str) -> dict[str, Any]:
    text = resources.files("deletion.domain").joinpath(name).read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


# What we write, and what a Java producer using `Schema.AVRO(PendingDeleteLedgerInfo.class)`
# writes: Avro 1.10+ reflection sorts the fields by name (AVRO-2579), so a Java consumer and
# the broker's schema registry read ours as their own.
SCHEMA_DEFINITION = _load_schema("pending_delete_ledger_info.avsc")
SCHEMA = fastavro.parse_schema(SCHEMA_DEFINITION)
# What this project wrote before (the PIP's field order); messages already in topics carry it.
V1_SCHEMA_DEFINITION = _load_schema("pending_delete_ledger_info_v1.avsc")
V1_SCHEMA = fastavro.parse_schema(V1_SCHEMA_DEFINITION)


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


def writer_schema_of(payload: bytes) -> Any:
    """Which of our two schemas wrote `payload`, told by its first byte; it cannot be wrong.

    The current schema starts with the non-nullable boolean `checkLedgerStillInUse`, which
    Java and fastavro write as 00 or 01. The old one starts with the union `topicName`, and
    a message whose topicName is null was never accepted, so every old message worth reading
    starts with 02 (branch 1). No first byte belongs to both: old bytes are never read as new
    ones, nor new as old (tests/unit/test_message_java.py has the vectors). Anything else is
    refused here rather than guessed.
    """
    first = payload[:1]
    if first in (b"\x00", b"\x01"):
        return SCHEMA
    if first == b"\x02":
        return V1_SCHEMA
    raise DecodeError(
        f"no known PendingDeleteLedgerInfo schema starts with {first.hex() or 'nothing'}"
    )


def decode(
    payload: bytes, writer_schema: Mapping[str, Any] | None = None
) -> PendingDeleteLedgerInfo:
    """Decode and validate; every malformed input raises DecodeError and nothing else.

    The bytes are read with the schema that wrote them and resolved by field name (Avro
    schema resolution) onto ours, so the field order of the writer does not matter.
    `writer_schema` is that schema when the broker's registry told us (the message's schema
    version); without it, `writer_schema_of` picks one of the two this project knows.

    A message re-sent to the retry or archive topic keeps its bytes but carries the schema
    the re-sender declared (the Python client cannot send one message with another schema,
    as Java's `AUTO_PRODUCE_BYTES(reader schema)` does): an old message re-sent is labelled
    with the current schema. So bytes the declared writer cannot read (as Avro: not bytes it
    could have written) are read as the first byte says, if it names one of ours. Each of
    our two schemas refuses the other's bytes (tests/unit/test_message_java.py), so an old
    message read under the new label is read as its writer wrote it; bytes the declared
    writer does read are never read a second way.
    """
    if len(payload) > MAX_MESSAGE_BYTES:
        raise DecodeError(f"message of {len(payload)} bytes exceeds {MAX_MESSAGE_BYTES}")
    if writer_schema is None:
        return _from_record(_read(payload, lambda: writer_schema_of(payload)))
    try:
        record = _read(payload, lambda: _parsed_writer(writer_schema))
    except DecodeError as declared_error:
        try:
            record = _read(payload, lambda: writer_schema_of(payload))
        except DecodeError:
            raise declared_error from None
    return _from_record(record)


# Parsed writer schemas by the identity of their definition, which is kept alive beside it
# so that its id cannot be reused: the transport hands the same definition object for every
# message of a topic and schema version, and parsing one costs more than decoding a message.
_PARSED_WRITERS: dict[int, tuple[Mapping[str, Any], Any]] = {}
_MAX_PARSED_WRITERS = 256


def _parsed_writer(writer_schema: Mapping[str, Any]) -> Any:
    cached = _PARSED_WRITERS.get(id(writer_schema))
    if cached is not None and cached[0] is writer_schema:
        return cached[1]
    # Resolution matches records by unqualified name; the registry's schema for these topics
    # is this record whatever its writer called it (as the client's AvroSchema assumes too).
    parsed = fastavro.parse_schema(dict(writer_schema, name=SCHEMA_DEFINITION["name"]))
    if parsed == SCHEMA:
        parsed = SCHEMA  # ours: read as written, without resolution (see _read)
    if len(_PARSED_WRITERS) >= _MAX_PARSED_WRITERS:
        _PARSED_WRITERS.clear()
    _PARSED_WRITERS[id(writer_schema)] = (writer_schema, parsed)
    return parsed


def _read(payload: bytes, writer_of: Callable[[], Any]) -> dict[str, Any]:
    """The record as the writer schema reads it, resolved onto ours. The payload must be
    exactly what that schema encodes for the values read: fastavro keeps the low 64 bits of
    an over-long varint and reads any non-zero byte as true, where Java refuses the first
    and a second reader could disagree on the second."""
    try:
        writer = writer_of()
        if writer is SCHEMA:  # nearly every message: read strictly, without the re-encoding
            canonical_record = pending_delete_avro.read(payload)
            if canonical_record is not None:
                return canonical_record
        stream = io.BytesIO(payload)
        written = fastavro.schemaless_reader(stream, writer, None)
        consumed = stream.tell()
        canonical = io.BytesIO()
        fastavro.schemaless_writer(canonical, writer, written)
        # Written with ours, it reads as written; any other writer is resolved onto ours.
        record = (
            written
            if writer is SCHEMA
            else fastavro.schemaless_reader(io.BytesIO(payload), writer, SCHEMA)
        )
    except DecodeError:
        raise
    except Exception as exc:  # fastavro signals bad bytes and bad schemas with many types
        raise DecodeError(
            f"not an Avro PendingDeleteLedgerInfo ({_bytes(len(payload))}): {_avro_problem(exc)}"
        ) from exc
    if consumed != len(payload):
        raise DecodeError(f"{len(payload) - consumed} trailing bytes after the record")
    if canonical.getvalue() != payload:
        raise DecodeError("non-canonical Avro encoding (over-long varint or boolean byte)")
    if not isinstance(record, dict):
        raise DecodeError("not an Avro record")
    return record


# What fastavro's exceptions mean for bytes read against a schema; anything else is named.
_AVRO_PROBLEMS = {
    IndexError: "a union branch or enum symbol number out of range",
    EOFError: "they end inside the record",
    UnicodeDecodeError: "a string is not UTF-8",
    MemoryError: "a length too large to be real",
}


def _bytes(n: int) -> str:
    return "1 byte" if n == 1 else f"{n:,} bytes"


def _avro_problem(exc: Exception) -> str:
    for kind, meaning in _AVRO_PROBLEMS.items():
        if isinstance(exc, kind):
            return meaning
    return f"{type(exc).__name__}: {str(exc)[:200]}"


@functools.lru_cache(maxsize=4096)
def _topic_name(text: str) -> TopicName:
    """Parsed once per topic: a burst of deletions names the same few topics over and over."""
    return TopicName.parse(text)


# By symbol: a look-up here costs a tenth of calling the Enum, paid on every message.
_COMPONENTS = {component.value: component for component in LedgerComponent}
_TYPES = {ledger_type.value: ledger_type for ledger_type in LedgerType}


def _from_record(record: dict[str, Any]) -> PendingDeleteLedgerInfo:
    missing = [
        k for k in ("topicName", "ledgerComponent", "ledgerType", "ledgerId") if record[k] is None
    ]
    if missing:
        raise DecodeError(f"required fields are null: {', '.join(missing)}")
    info = PendingDeleteLedgerInfo(
        topic_name=_topic_name(record["topicName"]),
        ledger_component=_COMPONENTS[record["ledgerComponent"]],
        ledger_type=_TYPES[record["ledgerType"]],
        ledger_id=record["ledgerId"],
        context=record["context"],
        check_ledger_still_in_use=record["checkLedgerStillInUse"],
        properties=record["properties"] or {},
    )
    _ = info.ledger_info  # a corrupt context is a decode error now, not at deletion time
    return info
