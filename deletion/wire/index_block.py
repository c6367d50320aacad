"""The ledger metadata inside a blob-store offloader's index object (`<uuid>-ledger-<id>-index`).

Layout (tiered-storage/jcloud/.../impl/OffloadIndexBlockImpl.java, `toStream`; Java's
big-endian `writeInt`/`writeLong`): magic `0xDE47DE47` (int), index block length (int), data
object length (long), data block header length (long), index entry count (int), segment
metadata length (int), then that many bytes of the ledger's `LedgerMetadataFormat`
(OffloadUtils.buildLedgerMetadataFormat), then the index entries. Only the part up to the
metadata is read. Streaming offload (PIP-76) writes another format (OffloadIndexBlockV2Impl)
under other keys; its ledgers are refused before this is reached.
"""

from __future__ import annotations

import struct

from core.errors import DecodeError
from deletion.wire.proto import require_complete
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

INDEX_MAGIC_WORD = 0xDE47DE47
HEADER = struct.Struct(">IiqqiI")
# A LedgerMetadataFormat is a few hundred bytes; far more means this is not one.
MAX_METADATA_LENGTH = 1 << 20


def metadata_end(prefix: bytes) -> int:
    """How many leading bytes of the index object hold its header and ledger metadata."""
    if len(prefix) < HEADER.size:
        raise DecodeError(f"index object is {len(prefix)} bytes, shorter than its header")
    magic, block_length, _, _, entries, metadata_length = HEADER.unpack_from(prefix)
    if magic != INDEX_MAGIC_WORD:
        raise DecodeError(f"index object has magic word {magic:#x}, not {INDEX_MAGIC_WORD:#x}")
    end: int = HEADER.size + metadata_length
    if not 0 < metadata_length <= MAX_METADATA_LENGTH or entries < 0 or block_length < end:
        raise DecodeError(
            f"index header is inconsistent: metadata length {metadata_length},"
            f" {entries} entries, block length {block_length}"
        )
    return end


def ledger_metadata(prefix: bytes) -> LedgerMetadataFormat:
    """The ledger metadata from the first `metadata_end(prefix)` (or more) bytes."""
    end = metadata_end(prefix)
    if len(prefix) < end:
        raise DecodeError(f"index object ends at {len(prefix)} bytes, inside its metadata")
    metadata = LedgerMetadataFormat()
    try:
        metadata.ParseFromString(prefix[HEADER.size : end])
    except Exception as exc:  # protobuf reports bad bytes with its own DecodeError and others
        raise DecodeError(f"index metadata is not a LedgerMetadataFormat: {exc}") from exc
    # Java parses it with a builder's build(), which refuses missing required fields.
    require_complete(metadata, "index object ledger metadata")
    return metadata
