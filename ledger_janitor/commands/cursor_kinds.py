"""The two messages `cursor decode` reads, and what it says when given the other one.

A cursor ledger's entry is a `PositionInfo`; a cursor's znode is a `ManagedCursorInfo`. Both
start with two varints, and their field 3 differs in wire type (ranges, length-delimited, in
the entry; markDeleteEntryId, a varint, in the znode): read as the other, the bytes fail on
field 3, which alone tells an operator nothing. So a failed decode is tried as the other
message, and the error says which `--kind` reads the bytes, if one does.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from core.errors import DecodeError
from cursor.durable.json_form import cursor_info_json, position_info_json
from cursor.wire.cursor_info_codec import decode_cursor_info
from cursor.wire.position_info_codec import decode_position_info


class Kind(str, Enum):
    POSITION_INFO = "position-info"
    CURSOR_INFO = "cursor-info"


_NAMES = {
    Kind.POSITION_INFO: ("PositionInfo", "a cursor ledger's entry"),
    Kind.CURSOR_INFO: ("ManagedCursorInfo", "a cursor's znode"),
}


def decoded(kind: Kind, plain: bytes, where: str) -> dict[str, Any]:
    """The message as `cursor decode --json` prints it; a DecodeError says what the bytes
    look like when they are not the message `kind` names."""
    try:
        return _decode(kind, plain, where)
    except DecodeError as exc:
        raise DecodeError(_explained(kind, plain, where, str(exc))) from None


def _decode(kind: Kind, plain: bytes, where: str) -> dict[str, Any]:
    if kind is Kind.POSITION_INFO:
        return position_info_json(decode_position_info(plain, where))
    return cursor_info_json(decode_cursor_info(plain, where))


def _explained(kind: Kind, plain: bytes, where: str, error: str) -> str:
    name = _NAMES[kind][0]
    detail = error.removeprefix(f"{where}: ")
    other = Kind.CURSOR_INFO if kind is Kind.POSITION_INFO else Kind.POSITION_INFO
    other_name, other_what = _NAMES[other]
    try:
        _decode(other, plain, where)
    except DecodeError:
        names = " nor a ".join(n for n, _ in _NAMES.values())
        return f"{where}: neither a {names} (read as a {name}: {detail})"
    return (
        f"{where}: not a {name} ({detail}); it looks like a {other_name} ({other_what}): "
        f"try --kind {other.value}"
    )
