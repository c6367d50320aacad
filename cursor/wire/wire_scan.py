"""Top-level walk of a PositionInfo or ManagedCursorInfo that hands the big repeated fields to
numpy and everything else, small, to protobuf.

The loop runs once per top-level field, except that a whole run of canonical MessageRange
records is consumed in one step. A field number the .proto does not know is skipped, as
protobuf-java keeps it aside: a newer Pulsar may add fields, and the state must still read.
A known field with the wrong wire type, a group, an invalid wire type or a field running
past the end is refused: those mean the bytes are not what we think they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from core.errors import DecodeError
from cursor.wire.bitset_wire import decode_long_list_map
from cursor.wire.content import LedgerBits, WireRanges
from cursor.wire.range_wire import decode_range_run
from cursor.wire.varint import read_varint
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import MessageRange

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
# Groups (3, 4) were deprecated before Pulsar existed; no new field will be one.
_SKIPPABLE = frozenset((VARINT, FIXED64, LENGTH_DELIMITED, FIXED32))


@dataclass
class ScannedMessage:
    rest: bytes  # every field but the ranges and bit sets, in their original order
    ranges: WireRanges
    bitsets: list[LedgerBits] = field(default_factory=list)


def scan(
    data: bytes,
    wire_types: Mapping[int, int],
    range_field: int,
    bitset_field: int | None,
    where: str,
) -> ScannedMessage:
    buf = np.frombuffer(data, np.uint8)
    rest: list[bytes] = []
    ranges: list[WireRanges] = []
    bitsets: list[LedgerBits] = []
    range_tag = range_field << 3 | LENGTH_DELIMITED
    position = 0
    while position < len(data):
        tag, after = _varint(data, position, where)
        number, wire = tag >> 3, tag & 7
        expected = wire_types.get(number)
        if expected is None and number > 0 and wire in _SKIPPABLE:
            position = _field_end(data, after, wire, where)
            continue
        if expected != wire:
            raise DecodeError(f"{where}: unexpected field {number} (wire type {wire})")
        if tag == range_tag:
            run, end = decode_range_run(buf, position, range_tag)
            if end > position:
                ranges.append(run)
                position = end
                continue
        end = _field_end(data, after, wire, where)
        if tag == range_tag:
            ranges.append(_one_range(data[_body(data, after, where) : end], where))
        elif number == bitset_field:
            bitsets.append(decode_long_list_map(data[_body(data, after, where) : end], where))
        else:
            rest.append(data[position:end])
        position = end
    return ScannedMessage(b"".join(rest), WireRanges.concat(ranges), bitsets)


def _varint(data: bytes, position: int, where: str) -> tuple[int, int]:
    try:
        return read_varint(data, position)
    except ValueError as exc:
        raise DecodeError(f"{where}: {exc}") from None


def _body(data: bytes, after_tag: int, where: str) -> int:
    return _varint(data, after_tag, where)[1]


def _field_end(data: bytes, after_tag: int, wire: int, where: str) -> int:
    if wire == VARINT:
        end = _varint(data, after_tag, where)[1]
    elif wire == FIXED64:
        end = after_tag + 8
    elif wire == FIXED32:
        end = after_tag + 4
    else:
        length, body = _varint(data, after_tag, where)
        end = body + length
    if end > len(data):
        raise DecodeError(f"{where}: field overruns the {len(data)} bytes")
    return end


def _one_range(body: bytes, where: str) -> WireRanges:
    """A MessageRange the vectorised path declined: valid protobuf, just not canonical."""
    message = MessageRange()
    try:
        message.ParseFromString(body)
    except Exception as exc:
        raise DecodeError(f"{where}: corrupt MessageRange: {exc}") from exc
    require_complete(message, where)
    low, high = message.lowerEndpoint, message.upperEndpoint
    columns = (low.ledgerId, low.entryId, high.ledgerId, high.entryId)
    return WireRanges(*(np.array([value], np.int64) for value in columns))
