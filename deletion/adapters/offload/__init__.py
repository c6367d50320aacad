"""Deleting ledgers Pulsar offloaded to tiered storage (ledgerType OFFLOAD_LEDGER).

Adapters: `S3OffloadStorage` (aws-s3, S3, aliyun-oss) and `FileSystemOffloadStorage` (local
filesystem); `OffloadRouter` picks one per ledger by the driver recorded in its context.
"""

from __future__ import annotations

from deletion.adapters.offload.filesystem import FileSystemOffloadStorage
from deletion.adapters.offload.registry import OffloadRouter, offload_storage_for
from deletion.adapters.offload.s3 import S3OffloadStorage, data_key, index_key, s3_client
from deletion.domain.offload_port import (
    FILESYSTEM_DRIVERS,
    S3_DRIVERS,
    UNSUPPORTED_DRIVERS,
    OffloadStorage,
    UnsupportedOffloadDriverError,
)
from deletion.wire.offload_context import (
    IncompleteOffloadError,
    OffloadedLedger,
    decode_offload,
    java_uuid,
    java_uuid_bits,
    offload_context,
    parse_ledger_info,
)

__all__ = [
    "FILESYSTEM_DRIVERS",
    "S3_DRIVERS",
    "UNSUPPORTED_DRIVERS",
    "FileSystemOffloadStorage",
    "IncompleteOffloadError",
    "OffloadRouter",
    "OffloadStorage",
    "OffloadedLedger",
    "S3OffloadStorage",
    "UnsupportedOffloadDriverError",
    "data_key",
    "decode_offload",
    "index_key",
    "java_uuid",
    "java_uuid_bits",
    "offload_context",
    "offload_storage_for",
    "parse_ledger_info",
    "s3_client",
]
