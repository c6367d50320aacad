"""A loopback stand-in for a broker with a schema registry, for the real Pulsar client.

pulsar-lite accepts a declared schema and drops it: its messages carry no schema version
and it does not answer GetSchema. A real broker cannot run here, so this speaks just enough
of Pulsar's binary protocol (PulsarApi.proto, field numbers below) for one client to
create producers and consumers on non-partitioned topics, send, receive and ask for a
schema version. It records the schema each PRODUCER and SUBSCRIBE declared, registers a
producer's schema as the next version of its topic (as the registry does) and stamps that
version on the producer's messages; `publish` adds a message written with any schema.

Frames: `[total size][command size][BaseCommand]`, and for SEND and MESSAGE then
`[0x0e01 magic][crc32c]` (optional, not sent here), `[metadata size][MessageMetadata]`
and the payload. The proto is compiled at import with grpcio-tools, as the project's own.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from harness.pulsar_protocol import (
    AVRO,
    CLOSE_CONSUMER,
    CLOSE_PRODUCER,
    CONNECT,
    CONNECTED,
    ERROR,
    FLOW,
    GET_SCHEMA,
    GET_SCHEMA_RESPONSE,
    INCOMPATIBLE_SCHEMA,
    LOOKUP,
    LOOKUP_CONNECT,
    LOOKUP_RESPONSE,
    MAGIC,
    MESSAGE,
    PARTITIONED_METADATA,
    PARTITIONED_METADATA_RESPONSE,
    PING,
    PONG,
    PRODUCER,
    PRODUCER_SUCCESS,
    SEND,
    SEND_RECEIPT,
    SUBSCRIBE,
    SUCCESS,
    TOPIC_NOT_FOUND,
    frame,
    pb,
    read_exactly,
    version_bytes,
)


@dataclass(frozen=True)
class Declared:
    """A schema a PRODUCER or SUBSCRIBE command carried."""

    command: str  # "producer" or "subscribe"
    topic: str
    type: int
    definition: bytes


@dataclass
class _Stored:
    metadata: bytes
    payload: bytes


@dataclass
class SchemaBroker:
    port: int
    refuse_schemas: bool = False  # answer a declared schema as a broker with data but none
    declared: list[Declared] = field(default_factory=list)
    schema_requests: list[tuple[str, int]] = field(default_factory=list)
    registry: dict[str, list[bytes]] = field(default_factory=dict)
    messages: dict[str, list[_Stored]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    def register(self, topic: str, definition: bytes) -> int:
        """Add a schema version to `topic`'s registry; return its number."""
        with self.lock:
            versions = self.registry.setdefault(topic, [])
            if definition not in versions:
                versions.append(definition)
            return versions.index(definition)

    def publish(self, topic: str, payload: bytes, version: int | None) -> None:
        """A message from some other producer, stamped with `version` (None: none)."""
        metadata = pb.MessageMetadata(producer_name="other", sequence_id=0, publish_time=1)
        if version is not None:
            metadata.schema_version = version_bytes(version)
        with self.lock:
            self.messages.setdefault(topic, []).append(
                _Stored(metadata.SerializeToString(), payload)
            )


class _Connection:
    def __init__(self, broker: SchemaBroker, conn: socket.socket) -> None:
        self.broker, self.conn = broker, conn
        self.producers: dict[int, tuple[str, bytes]] = {}  # id -> (topic, schema version)
        self.consumers: dict[int, str] = {}
        self.send_lock = threading.Lock()

    def write(self, command: Any, tail: bytes = b"") -> None:
        with self.send_lock:
            self.conn.sendall(frame(command, tail))

    def serve(self) -> None:
        while True:
            total, size = struct.unpack(">II", read_exactly(self.conn, 8))
            command = pb.BaseCommand.FromString(read_exactly(self.conn, size))
            rest = read_exactly(self.conn, total - 4 - size)
            self.handle(command, rest)

    def handle(self, cmd: Any, rest: bytes) -> None:
        broker, kind = self.broker, cmd.type
        if kind == CONNECT:
            connected = pb.CommandConnected(server_version="schema-broker", protocol_version=21)
            self.write(pb.BaseCommand(type=CONNECTED, connected=connected))
        elif kind == PING:
            self.write(pb.BaseCommand(type=PONG, pong=pb.Empty()))
        elif kind == PARTITIONED_METADATA:
            request = cmd.partitionMetadata.request_id
            response = pb.CommandPartitionedTopicMetadataResponse(
                partitions=0, request_id=request, response=0
            )
            self.write(
                pb.BaseCommand(
                    type=PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=response
                )
            )
        elif kind == LOOKUP:
            response = pb.CommandLookupTopicResponse(
                brokerServiceUrl=broker.url,
                response=LOOKUP_CONNECT,
                request_id=cmd.lookupTopic.request_id,
                authoritative=True,
            )
            self.write(pb.BaseCommand(type=LOOKUP_RESPONSE, lookupTopicResponse=response))
        elif kind == PRODUCER:
            self.producer(cmd.producer)
        elif kind == SEND:
            self.send(cmd.send, rest)
        elif kind == SUBSCRIBE:
            self.subscribe(cmd.subscribe)
        elif kind == FLOW:
            self.deliver(cmd.flow.consumer_id)
        elif kind in (CLOSE_PRODUCER, CLOSE_CONSUMER):
            close = cmd.close_producer if kind == CLOSE_PRODUCER else cmd.close_consumer
            success = pb.CommandSuccess(request_id=close.request_id)
            self.write(pb.BaseCommand(type=SUCCESS, success=success))
        elif kind == GET_SCHEMA:
            self.get_schema(cmd.getSchema)
        # Anything else (acks, redelivery requests) needs no answer here.

    def refuse(self, request_id: int) -> None:
        message = "Topic does not have schema to check"
        error = pb.CommandError(request_id=request_id, error=INCOMPATIBLE_SCHEMA, message=message)
        self.write(pb.BaseCommand(type=ERROR, error=error))

    def producer(self, command: Any) -> None:
        version = b""
        if command.HasField("schema"):
            self.record("producer", command.topic, command.schema)
            if self.broker.refuse_schemas:
                self.refuse(command.request_id)
                return
            number = self.broker.register(command.topic, command.schema.schema_data)
            version = version_bytes(number)
        self.producers[command.producer_id] = (command.topic, version)
        success = pb.CommandProducerSuccess(
            request_id=command.request_id, producer_name=f"p-{command.producer_id}"
        )
        if version:
            success.schema_version = version
        self.write(pb.BaseCommand(type=PRODUCER_SUCCESS, producer_success=success))

    def record(self, command: str, topic: str, schema: Any) -> None:
        with self.broker.lock:
            self.broker.declared.append(Declared(command, topic, schema.type, schema.schema_data))

    def send(self, command: Any, rest: bytes) -> None:
        if rest[:2] == MAGIC:
            rest = rest[6:]
        (size,) = struct.unpack(">I", rest[:4])
        topic, _ = self.producers[command.producer_id]
        with self.broker.lock:
            stored = self.broker.messages.setdefault(topic, [])
            stored.append(_Stored(rest[4 : 4 + size], rest[4 + size :]))
            entry = len(stored) - 1
        receipt = pb.CommandSendReceipt(
            producer_id=command.producer_id,
            sequence_id=command.sequence_id,
            message_id=pb.MessageIdData(ledgerId=1, entryId=entry),
        )
        self.write(pb.BaseCommand(type=SEND_RECEIPT, send_receipt=receipt))

    def subscribe(self, command: Any) -> None:
        if command.HasField("schema"):
            self.record("subscribe", command.topic, command.schema)
            if self.broker.refuse_schemas:
                self.refuse(command.request_id)
                return
            self.broker.register(command.topic, command.schema.schema_data)
        self.consumers[command.consumer_id] = command.topic
        success = pb.CommandSuccess(request_id=command.request_id)
        self.write(pb.BaseCommand(type=SUCCESS, success=success))

    def deliver(self, consumer_id: int) -> None:
        """Everything stored on the topic, once per FLOW: enough for a test's few messages."""
        topic = self.consumers[consumer_id]
        with self.broker.lock:
            stored = list(self.broker.messages.get(topic, []))
            self.broker.messages[topic] = []
        for entry, message in enumerate(stored):
            command = pb.CommandMessage(
                consumer_id=consumer_id, message_id=pb.MessageIdData(ledgerId=2, entryId=entry)
            )
            tail = struct.pack(">I", len(message.metadata)) + message.metadata + message.payload
            self.write(pb.BaseCommand(type=MESSAGE, message=command), tail)

    def get_schema(self, command: Any) -> None:
        """A version, or without one (as the client asks for the latest) the newest."""
        with self.broker.lock:
            versions = self.broker.registry.get(command.topic, [])
            if command.HasField("schema_version"):
                (version,) = struct.unpack(">q", command.schema_version)
            else:
                version = len(versions) - 1
            self.broker.schema_requests.append((command.topic, version))
            definition = versions[version] if 0 <= version < len(versions) else None
        response = pb.CommandGetSchemaResponse(request_id=command.request_id)
        if definition is None:
            response.error_code = TOPIC_NOT_FOUND
            response.error_message = "no such schema version"
        else:
            response.schema.CopyFrom(pb.Schema(name="", schema_data=definition, type=AVRO))
            response.schema_version = version_bytes(version)
        self.write(pb.BaseCommand(type=GET_SCHEMA_RESPONSE, getSchemaResponse=response))


@contextmanager
def schema_broker(refuse_schemas: bool = False) -> Iterator[SchemaBroker]:
    """Serve until the block ends; every thread it started has ended when it returns."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # so that the loop sees `stopping`
    broker = SchemaBroker(listener.getsockname()[1], refuse_schemas)
    stopping = threading.Event()
    threads: list[threading.Thread] = []
    sockets: list[socket.socket] = []

    def run(conn: socket.socket) -> None:
        # Ends when the client goes away or the broker stops.
        with contextlib.suppress(ConnectionError, OSError, struct.error):
            _Connection(broker, conn).serve()

    def accept() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            sockets.append(conn)
            thread = threading.Thread(target=run, args=(conn,), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, name="schema-broker", daemon=True)
    acceptor.start()
    try:
        yield broker
    finally:
        stopping.set()
        acceptor.join(5)
        listener.close()
        for conn in sockets:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        deadline = time.monotonic() + 5
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
