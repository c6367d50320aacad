"""Generated protobuf modules for the Pulsar and BookKeeper formats in the .proto files beside them.

Regenerate with `python -m grpc_tools.protoc -I deletion/proto --python_out=deletion/proto
--mypy_out=deletion/proto deletion/proto/*.proto`; tests/test_proto_vectors.py checks they match.
"""
