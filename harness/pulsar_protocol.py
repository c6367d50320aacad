"""The subset of Pulsar's binary protocol (PulsarApi.proto, field numbers kept) the loopback
schema broker speaks, compiled at import with grpcio-tools, and its frames:
`[total size][command size][BaseCommand]`, then for SEND and MESSAGE the metadata and payload."""

from __future__ import annotations

import importlib
import socket
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

PROTO = """
syntax = "proto2";
package harness_schema_broker;
message KeyValue { required string key = 1; required string value = 2; }
message Schema {
  required string name = 1; required bytes schema_data = 3; required int32 type = 4;
  repeated KeyValue properties = 5;
}
message MessageIdData {
  required uint64 ledgerId = 1; required uint64 entryId = 2;
  optional int32 partition = 3 [default = -1]; optional int32 batch_index = 4 [default = -1];
}
message MessageMetadata {
  required string producer_name = 1; required uint64 sequence_id = 2;
  required uint64 publish_time = 3; repeated KeyValue properties = 4;
  optional string partition_key = 6; optional bytes schema_version = 16;
}
message CommandConnected {
  required string server_version = 1; optional int32 protocol_version = 2;
  optional int32 max_message_size = 3;
}
message CommandSubscribe {
  required string topic = 1; required string subscription = 2; required int32 subType = 3;
  required uint64 consumer_id = 4; required uint64 request_id = 5; optional Schema schema = 12;
}
message CommandProducer {
  required string topic = 1; required uint64 producer_id = 2; required uint64 request_id = 3;
  optional Schema schema = 7;
}
message CommandSend { required uint64 producer_id = 1; required uint64 sequence_id = 2; }
message CommandSendReceipt {
  required uint64 producer_id = 1; required uint64 sequence_id = 2;
  optional MessageIdData message_id = 3;
}
message CommandMessage { required uint64 consumer_id = 1; required MessageIdData message_id = 2; }
message CommandFlow { required uint64 consumer_id = 1; required uint32 messagePermits = 2; }
message CommandSuccess { required uint64 request_id = 1; }
message CommandError {
  required uint64 request_id = 1; required int32 error = 2; required string message = 3;
}
message CommandClose { required uint64 id = 1; required uint64 request_id = 2; }
message CommandProducerSuccess {
  required uint64 request_id = 1; required string producer_name = 2;
  optional int64 last_sequence_id = 3 [default = -1]; optional bytes schema_version = 4;
}
message CommandPartitionedTopicMetadata {
  required string topic = 1; required uint64 request_id = 2;
}
message CommandPartitionedTopicMetadataResponse {
  optional uint32 partitions = 1; required uint64 request_id = 2; optional int32 response = 3;
}
message CommandLookupTopic { required string topic = 1; required uint64 request_id = 2; }
message CommandLookupTopicResponse {
  optional string brokerServiceUrl = 1; optional int32 response = 3;
  required uint64 request_id = 4; optional bool authoritative = 5;
}
message CommandGetSchema {
  required uint64 request_id = 1; required string topic = 2; optional bytes schema_version = 3;
}
message CommandGetSchemaResponse {
  required uint64 request_id = 1; optional int32 error_code = 2; optional string error_message = 3;
  optional Schema schema = 4; optional bytes schema_version = 5;
}
message Empty {}
message BaseCommand {
  required int32 type = 1;
  optional Empty connect = 2;
  optional CommandConnected connected = 3;
  optional CommandSubscribe subscribe = 4;
  optional CommandProducer producer = 5;
  optional CommandSend send = 6;
  optional CommandSendReceipt send_receipt = 7;
  optional CommandMessage message = 9;
  optional CommandFlow flow = 11;
  optional CommandSuccess success = 13;
  optional CommandError error = 14;
  optional CommandClose close_producer = 15;
  optional CommandClose close_consumer = 16;
  optional CommandProducerSuccess producer_success = 17;
  optional Empty ping = 18;
  optional Empty pong = 19;
  optional CommandPartitionedTopicMetadata partitionMetadata = 21;
  optional CommandPartitionedTopicMetadataResponse partitionMetadataResponse = 22;
  optional CommandLookupTopic lookupTopic = 23;
  optional CommandLookupTopicResponse lookupTopicResponse = 24;
  optional CommandGetSchema getSchema = 34;
  optional CommandGetSchemaResponse getSchemaResponse = 35;
}
"""
# BaseCommand.Type values, and the two response enums' values used.
CONNECT, CONNECTED, SUBSCRIBE, PRODUCER, SEND, SEND_RECEIPT = 2, 3, 4, 5, 6, 7
MESSAGE, FLOW, SUCCESS, ERROR, CLOSE_PRODUCER, CLOSE_CONSUMER = 9, 11, 13, 14, 15, 16
PRODUCER_SUCCESS, PING, PONG = 17, 18, 19
PARTITIONED_METADATA, PARTITIONED_METADATA_RESPONSE, LOOKUP, LOOKUP_RESPONSE = 21, 22, 23, 24
GET_SCHEMA, GET_SCHEMA_RESPONSE = 34, 35
LOOKUP_CONNECT, TOPIC_NOT_FOUND, INCOMPATIBLE_SCHEMA = 1, 11, 18
AVRO = 4
MAGIC = b"\x0e\x01"


def _compile() -> Any:
    from grpc_tools import protoc  # type: ignore[import-untyped]

    out = Path(tempfile.mkdtemp(prefix="schema-broker-proto-"))
    (out / "harness_schema_broker.proto").write_text(PROTO)
    if protoc.main(["protoc", f"-I{out}", f"--python_out={out}", "harness_schema_broker.proto"]):
        raise RuntimeError("protoc failed on the schema broker's proto")
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("harness_schema_broker_pb2")
    finally:
        sys.path.remove(str(out))


pb: Any = _compile()


def version_bytes(version: int) -> bytes:
    """A schema version as Pulsar's BookKeeper schema storage writes it: a big-endian long."""
    return struct.pack(">q", version)


def frame(command: Any, tail: bytes = b"") -> bytes:
    body: bytes = command.SerializeToString()
    return struct.pack(">II", 4 + len(body) + len(tail), len(body)) + body + tail


def read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data
