"""Top-level walk of a PositionInfo or ManagedCursorInfo that hands the big repeated fields to
numpy and everything else, small, to protobuf.

The loop runs once per top-level field, except that a whole run of canonical MessageRange
records is consumed in one step. A field number the .proto does not know is skipped, as
protobuf-java keeps it aside: a newer Pulsar may add fields, and the state must still read.
A known field with the wrong wire type, a group, an invalid wire type or a field running
past the end is refused: those mean the bytes are not what we think they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from core.errors import DecodeError
from cursor.ack import U8
from cursor.wire.bitset_wire import decode_long_list_map
from cursor.wire.content import LedgerBits, WireRanges
from cursor.wire.range_wire import decode_range_run
from cursor.wire.varint import read_varint
from deletion.wire.proto import require_complete
from deletion.wire.proto.ml_data_formats_pb2 import MessageRange

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
# Groups (3, 4) were deprecated before Pulsar existed; no new field will be one.
_SKIPPABLE = frozenset((VARINT, FIXED64, LENGTH_DELIMITED, FIXED32))


_LOOKAHEAD = 1 << 16  # bytes kept ahead when the message comes in pieces
_RUN_BYTES = 4 << 20  # records decoded before their ranges are handed on


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
    ranges: list[WireRanges] = []
    scanned = scan_pieces([data], wire_types, range_field, bitset_field, where, ranges.append)
    scanned.ranges = WireRanges.concat(ranges)
    return scanned


def scan_pieces(
    pieces: Iterable[bytes],
    wire_types: Mapping[int, int],
    range_field: int,
    bitset_field: int | None,
    where: str,
    on_ranges: Callable[[WireRanges], None],
) -> ScannedMessage:
    """`scan` of the pieces' concatenation, holding only a piece and a field at a time; the
    ranges go to `on_ranges` as they are decoded (the result holds none)."""
    source = _Pieces(pieces)
    rest: list[bytes] = []
    bitsets: list[LedgerBits] = []
    range_tag = range_field << 3 | LENGTH_DELIMITED
    while source.ensure(_LOOKAHEAD):
        data, position = source.data, source.position
        tag, after = _varint(data, position, where)
        number, wire = tag >> 3, tag & 7
        expected = wire_types.get(number)
        known = expected is not None
        if (known and expected != wire) or (not known and (number == 0 or wire not in _SKIPPABLE)):
            raise DecodeError(f"{where}: unexpected field {number} (wire type {wire})")
        if tag == range_tag:
            run, end = decode_range_run(source.array(), position, range_tag, _RUN_BYTES)
            if end > position:
                on_ranges(run)
                source.position = end
                continue
        end = _field_end(data, after, wire, where)
        if end > len(data):  # a field longer than the piece: gather the rest of it
            span, body = end - position, after - position
            if source.ensure(span) < span:
                raise DecodeError(f"{where}: field overruns the {source.length} bytes")
            data, position = source.data, source.position
            after, end = position + body, position + span
        source.position = end
        if expected is None:
            continue
        if tag == range_tag:
            on_ranges(_one_range(data[_body(data, after, where) : end], where))
        elif number == bitset_field:
            bitsets.append(decode_long_list_map(data[_body(data, after, where) : end], where))
        else:
            rest.append(data[position:end])
    return ScannedMessage(b"".join(rest), WireRanges(), bitsets)


class _Pieces:
    """The unread part of a message that arrives in pieces: `data[position:]`, refilled
    from the next pieces when asked for more than it holds (one copy of each piece)."""

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self._pieces = iter(pieces)
        self._done = False
        self._array: U8 | None = None
        self.data = b""
        self.position = 0
        self.length = 0  # bytes taken from the pieces so far

    def ensure(self, count: int) -> int:
        """At least `count` unread bytes, or all there are; how many are held."""
        held = len(self.data) - self.position
        if held < count and not self._done:
            parts: list[bytes | memoryview] = []
            if held:
                parts.append(memoryview(self.data)[self.position :])
            while held < count:
                piece = next(self._pieces, None)
                if piece is None:
                    self._done = True
                    break
                parts.append(piece)
                held += len(piece)
                self.length += len(piece)
            if len(parts) == 1 and isinstance(parts[0], bytes):
                self.data = parts[0]  # a whole piece: no copy
            else:
                self.data = b"".join(parts)
            self.position = 0
            self._array = None
        return held

    def array(self) -> U8:
        if self._array is None:
            self._array = np.frombuffer(self.data, np.uint8)
        return self._array


def _varint(data: bytes, position: int, where: str) -> tuple[int, int]:
    try:
        return read_varint(data, position)
    except ValueError as exc:
        raise DecodeError(f"{where}: {exc}") from None


def _body(data: bytes, after_tag: int, where: str) -> int:
    return _varint(data, after_tag, where)[1]


def _field_end(data: bytes, after_tag: int, wire: int, where: str) -> int:
    """Where a field ends, which may be past the bytes held so far."""
    if wire == VARINT:
        return _varint(data, after_tag, where)[1]
    if wire == FIXED64:
        return after_tag + 8
    if wire == FIXED32:
        return after_tag + 4
    length, body = _varint(data, after_tag, where)
    return body + length


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
