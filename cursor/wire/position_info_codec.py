"""`PositionInfo`, byte for byte as Java's MLDataFormats writes it.

Fields are written in field-number order, as protobuf-java does: 1 ledgerId, 2 entryId,
3 individualDeletedMessages, 4 properties, 5 batchedEntryDeletionIndexInfo,
6 individualDeletedMessageRanges. The small fields go through protobuf, the ranges and bit
sets through numpy, and the parts are concatenated: a protobuf message is the concatenation
of its fields.

`split_required=True` writes entryId last instead, which any proto2 parser accepts (fields
may come in any order). It is used for chunked states only (`split_from`): a torn prefix of
such a payload lacks entryId and a torn suffix lacks ledgerId, so neither can pass for a
complete state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from google.protobuf.message import DecodeError as ProtobufDecodeError

from core.errors import DecodeError
from cursor.ack import Position
from cursor.wire.bitset_wire import encode_long_list_maps
from cursor.wire.content import BatchIndexes, PositionInfoContent, WireRanges
from cursor.wire.range_encode import message_range_parts
from cursor.wire.range_runs import LedgerRuns, ledger_run_pieces
from cursor.wire.wire_scan import LENGTH_DELIMITED, VARINT, ScannedMessage, scan, scan_pieces
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import (
    BatchedEntryDeletionIndexInfo,
    LongProperty,
    PositionInfo,
)

RANGES_TAG = 0x1A  # field 3, length-delimited
_WIRE_TYPES = {1: VARINT, 2: VARINT, 3: LENGTH_DELIMITED, 4: LENGTH_DELIMITED}
_WIRE_TYPES |= {5: LENGTH_DELIMITED, 6: LENGTH_DELIMITED}


def encode_position_info(
    content: PositionInfoContent, *, split_required: bool = False, split_from: int | None = None
) -> bytes:
    """`split_from` splits the required fields when the message reaches that many bytes: the
    entry size from which a state is chunked."""
    ledger_field, entry_field, pieces = _parts(content)
    body = list(pieces)
    if split_from is not None:
        size = len(ledger_field) + len(entry_field) + sum(len(part) for part in body)
        split_required |= size >= split_from
    if split_required:
        return b"".join((ledger_field, *body, entry_field))
    return b"".join((ledger_field, entry_field, *body))


def split_position_info_pieces(
    content: PositionInfoContent, ledger_runs: Iterable[LedgerRuns]
) -> Iterator[bytes | memoryview]:
    """The split layout in pieces, the ranges encoded from each ledger's runs as they are
    asked for: `content`'s own ranges come first, then the runs'. Joined, the pieces are
    `encode_position_info(content with all the ranges, split_required=True)`."""
    ledger_field, entry_field, body = _parts(content, ledger_runs)
    yield ledger_field
    yield from body
    yield entry_field


def _parts(
    content: PositionInfoContent, ledger_runs: Iterable[LedgerRuns] = ()
) -> tuple[bytes, bytes, Iterator[bytes | memoryview]]:
    """(field 1, field 2, fields 3 to 6 in pieces): enough to lay the message out either way
    with one copy of the ranges, which are most of it."""
    ledger_id, entry_id = content.mark_delete
    return (
        PositionInfo(ledgerId=ledger_id).SerializePartialToString(),
        PositionInfo(entryId=entry_id).SerializePartialToString(),
        _body(content, ledger_runs),
    )


def _body(
    content: PositionInfoContent, ledger_runs: Iterable[LedgerRuns]
) -> Iterator[bytes | memoryview]:
    yield from message_range_parts(content.ranges, RANGES_TAG)
    yield from ledger_run_pieces(ledger_runs, RANGES_TAG)
    middle = PositionInfo(
        properties=[LongProperty(name=k, value=v) for k, v in content.properties.items()],
        batchedEntryDeletionIndexInfo=[batch_message(b) for b in content.batch_indexes],
    )
    yield middle.SerializePartialToString()
    yield encode_long_list_maps(content.bitsets)


def decode_position_info(data: bytes, where: str = "PositionInfo") -> PositionInfoContent:
    scanned = scan(data, _WIRE_TYPES, range_field=3, bitset_field=6, where=where)
    return _content(scanned, where)


def decode_position_info_pieces(
    pieces: Iterable[bytes], where: str, on_ranges: Callable[[WireRanges], None]
) -> PositionInfoContent:
    """`decode_position_info` of the pieces' concatenation, which is never built: the ranges
    go to `on_ranges` as they are decoded, and the content returned holds none."""
    scanned = scan_pieces(pieces, _WIRE_TYPES, 3, 6, where, on_ranges)
    return _content(scanned, where)


def _content(scanned: ScannedMessage, where: str) -> PositionInfoContent:
    message = PositionInfo()
    try:
        message.ParseFromString(scanned.rest)
    except ProtobufDecodeError as exc:
        raise DecodeError(f"{where}: corrupt PositionInfo: {exc}") from exc
    require_complete(message, where)
    return PositionInfoContent(
        mark_delete=Position(message.ledgerId, message.entryId),
        ranges=scanned.ranges,
        bitsets=tuple(scanned.bitsets),
        batch_indexes=tuple(batch_indexes(b) for b in message.batchedEntryDeletionIndexInfo),
        properties={p.name: p.value for p in message.properties},
    )


def batch_message(batch: BatchIndexes) -> BatchedEntryDeletionIndexInfo:
    message = BatchedEntryDeletionIndexInfo(deleteSet=batch.delete_set)
    message.position.ledgerId, message.position.entryId = batch.position
    return message


def batch_indexes(message: BatchedEntryDeletionIndexInfo) -> BatchIndexes:
    position = Position(message.position.ledgerId, message.position.entryId)
    return BatchIndexes(position, tuple(message.deleteSet))
