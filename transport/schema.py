"""The Avro schema our producers and consumers declare, and the schema each message was
written with, from the broker's schema registry.

Declaring it is what lets a broker's registry hold the schema, and so lets a Java consumer
(`Schema.AVRO(PendingDeleteLedgerInfo.class)`) or `pulsar-admin schemas get` read our
messages. The Python client's own `AvroSchema` encodes dicts only; ours passes on the bytes
the domain encoded, so they are exactly the bytes its vectors pin down.

A message carries the version of the schema its producer declared. Its bytes are decoded
with that writer schema (Avro schema resolution onto ours), fetched once per topic and
version with the binary protocol's GetSchema, as the client's `AvroSchema.decode_message`
does. A message without a version (a producer that declared none, or a broker without a
registry, such as pulsar-lite, which accepts and ignores declared schemas) has no writer
schema to fetch: the domain then tells its writer by its first byte.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Mapping
from typing import Any, NamedTuple

import _pulsar
import pulsar
import structlog
from pulsar.schema import BytesSchema, Schema

from core.errors import BrokerError, TransientBrokerError
from transport.client import translate
from transport.schema_registration import Register, Registration, base_topic

log = structlog.get_logger(__name__)
_NO_WRITER = "no AVRO writer schema in the registry; the message is read by its first byte"


class Written(NamedTuple):
    """A payload and the definition of the schema its producer declared, if the registry
    told us; what `Message.value()` gives for a consumer of a DeclaredAvroSchema (one a
    message: a named tuple)."""

    payload: bytes
    writer: Mapping[str, Any] | None


class DeclaredAvroSchema(Schema):  # type: ignore[misc]  # pulsar ships no type hints
    """An AVRO schema declared to the broker for payloads we encode and decode ourselves."""

    def __init__(self, definition: Mapping[str, Any], register: Register | None = None) -> None:
        super().__init__(bytes, _pulsar.SchemaType.AVRO, dict(definition), str(definition["name"]))
        self.registration = Registration(register)
        self._client: Any = None
        self._writers: dict[tuple[str, int], Mapping[str, Any] | None] = {}
        self._by_arrival: dict[tuple[str, int], Mapping[str, Any] | None] = {}
        self._lock = threading.Lock()

    def encode(self, obj: Any) -> bytes:
        if not isinstance(obj, bytes):
            raise TypeError(f"a payload must be encoded bytes, not {type(obj).__name__}")
        return obj

    def decode(self, data: bytes) -> Written:
        return Written(data, None)

    def attach_client(self, client: Any) -> None:
        # `subscribe` hands every schema the native client it subscribed with.
        self._client = client

    def decode_message(self, msg: Any) -> Written:
        version = msg.int_schema_version()
        if version < 0 or self._client is None:
            return Written(msg.data(), None)
        return Written(msg.data(), self.writer_schema(msg.topic_name(), version))

    def writer_schema(self, topic: str, version: int) -> Mapping[str, Any] | None:
        """The AVRO definition registered as `version` of `topic`'s schema; None if the
        registry has none to give (another type, unreadable, or refused), and the domain then
        tells the writer by the first byte. A transient failure raises TransientBrokerError
        and caches nothing: the message is handed back and asks again, rather than be read
        with a guessed schema."""
        # Known by the name the message arrived on: every message asks, so without parsing
        # the name or taking the lock (one dict read is atomic).
        arrived = (topic, version)
        if arrived in self._by_arrival:  # never removed once there
            return self._by_arrival[arrived]
        # The registry keeps one schema per topic, partitions included (`getSchemaName`).
        key = (base_topic(topic), version)
        with self._lock:
            if key in self._writers:
                self._by_arrival[arrived] = self._writers[key]
                return self._writers[key]
        try:
            info = self._client.get_schema_info(key[0], version)
        except pulsar.PulsarException as exc:
            error = translate(exc, f"get schema version {version} of {key[0]}")
            if isinstance(error, TransientBrokerError):
                raise error from exc
            log.warning(_NO_WRITER, topic=key[0], version=version, error=str(error))
            writer = None
        else:
            writer = _avro_definition(info)
            if writer is None:
                log.warning(_NO_WRITER, topic=key[0], version=version, error="not AVRO")
        with self._lock:
            self._writers[key] = writer
            self._by_arrival[arrived] = writer
        return writer


def _avro_definition(info: Any) -> Mapping[str, Any] | None:
    if info.schema_type() != _pulsar.SchemaType.AVRO:
        return None
    try:
        definition = json.loads(info.schema())
    except ValueError:
        return None
    return definition if isinstance(definition, dict) else None


# Which schema each client's producers and consumers declare: set once where the client is
# made (the wiring knows the definition; this layer may not import it), read wherever a
# producer or consumer is made, so the consumers' call sites need no new parameter.
_DECLARED: weakref.WeakKeyDictionary[pulsar.Client, Schema] = weakref.WeakKeyDictionary()


def declare(
    client: pulsar.Client,
    definition: Mapping[str, Any] | None,
    register: Register | None = None,
) -> None:
    """Have `client`'s producers and consumers of payloads declare `definition` (None: none),
    each topic's schema registered first, once (transport/schema_registration.py): through
    `register` if given and open to us, else through one partition."""
    if definition is None:
        _DECLARED.pop(client, None)
    else:
        _DECLARED[client] = DeclaredAvroSchema(definition, register)


def declared(client: pulsar.Client) -> Schema:
    """The schema `client`'s producers and consumers declare: BytesSchema (none) by default."""
    return _DECLARED.get(client) or BytesSchema()


def register_declared(client: pulsar.Client, topic: str) -> None:
    """Register `client`'s declared schema on `topic` now, unless this process did already
    (nothing when it declares none). Without a registrar open to us, a partitioned topic's
    first partition gets a producer of ours for a moment, which registers it."""
    schema = declared(client)
    if not isinstance(schema, DeclaredAvroSchema):
        return
    try:
        schema.registration.ensure(
            client, [topic], lambda one: client.create_producer(one, schema=schema)
        )
    except pulsar.PulsarException as exc:
        raise translate(exc, f"register our schema on {topic}") from exc


def subscribe(
    client: pulsar.Client, topic: str | list[str], subscription: str, **options: Any
) -> Any:
    """`client.subscribe` with the declared schema.

    A real broker refuses a consumer's schema on a topic that has messages or other consumers
    but no schema yet ("Topic does not have schema to check"): a topic written before the
    schema was declared, until a producer of ours registers it. Consuming matters more than
    declaring, so such a consumer subscribes without one, and says so.
    """
    schema = declared(client)
    if isinstance(schema, DeclaredAvroSchema):
        topics = [topic] if isinstance(topic, str) else topic
        schema.registration.ensure(
            client,
            topics,
            lambda one: client.subscribe(one, subscription, schema=schema, **options),
        )
    try:
        return client.subscribe(topic, subscription, schema=schema, **options)
    except pulsar.IncompatibleSchema as exc:
        if isinstance(schema, BytesSchema):
            raise
        log.warning(
            "the broker refused our schema; subscribing without one",
            topic=topic,
            subscription=subscription,
            error=str(exc),
        )
        return client.subscribe(topic, subscription, **options)


def create_producer(client: pulsar.Client, topic: str, **options: Any) -> Any:
    """`client.create_producer` with the declared schema.

    When the broker refuses it, what the topic holds decides. Another version of our own
    record (a namespace that forbids schema updates, or a newer or older ledger-janitor):
    produce without a schema, so that phase one never fails for a version alone; the domain
    tells the writer by the first byte. Anything else (another type, another record): some
    other producer writes to this topic, and nothing of ours goes there; BrokerError says
    what it holds.
    """
    schema = declared(client)
    if isinstance(schema, DeclaredAvroSchema):
        schema.registration.ensure(
            client, [topic], lambda one: client.create_producer(one, schema=schema, **options)
        )
    try:
        return client.create_producer(topic, schema=schema, **options)
    except pulsar.IncompatibleSchema as exc:
        if isinstance(schema, BytesSchema):
            raise
        held = _registered(client, topic)
        if held is not None and held != ("AVRO", schema.schema_info().name()):
            kind, name = held
            raise BrokerError(
                f"{topic} holds a {kind} schema{f' ({name})' if name else ''}, not our AVRO "
                f"{schema.schema_info().name()}: another producer writes to it, so nothing "
                "of ours is sent there; remove that producer and the topic's schema "
                "(pulsar-admin schemas delete)"
            ) from exc
        log.warning(
            "the broker refused this version of our schema; producing without one",
            topic=topic,
            error=str(exc),
        )
        return client.create_producer(topic, **options)


def _registered(client: pulsar.Client, topic: str) -> tuple[str, str] | None:
    """The type and record name of the topic's latest schema; None if the registry cannot say."""
    try:
        info = client._client.get_schema_info(base_topic(topic), -1)
    except pulsar.PulsarException:
        return None
    kind = str(info.schema_type()).rsplit(".", 1)[-1]
    name = ""
    if info.schema_type() == _pulsar.SchemaType.AVRO:
        definition = _avro_definition(info)
        name = str(definition.get("name", "")) if definition is not None else ""
    return kind, name


def written(received: Any) -> tuple[bytes, Mapping[str, Any] | None]:
    """A received message's payload and its writer schema, when the message came through a
    consumer of a DeclaredAvroSchema and carries a schema version; otherwise no writer schema.
    Raises TransientBrokerError/BrokerError if the registry could not be asked."""
    value = received.value() if callable(getattr(received, "value", None)) else None
    if isinstance(value, Written):
        return value.payload, value.writer
    return received.data(), None
