"""Generated protobuf modules for the Pulsar and BookKeeper formats in the .proto files beside them.

Regenerate with `python -m grpc_tools.protoc -I deletion/wire/proto
--python_out=deletion/wire/proto --mypy_out=deletion/wire/proto deletion/wire/proto/*.proto`;
tests/unit/test_proto_vectors.py checks they match.
"""

from typing import Any

from google.protobuf.message import Message

from core.errors import DecodeError


def require_complete(message: Message, where: str) -> None:
    """Python's protobuf parses proto2 messages whose required fields are missing; Java's
    refuses them. A LedgerInfo without its ledgerId must never read as ledger 0."""
    if not message.IsInitialized():
        untyped: Any = message  # the stubs lack FindInitializationErrors
        missing = ", ".join(untyped.FindInitializationErrors())
        raise DecodeError(f"{where}: {type(message).__name__} lacks required {missing}")
