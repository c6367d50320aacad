"""The JSON `cursor encode` reads, checked field by field before anything is built from it.

The format is what `cursor decode --json` prints (field names are the .proto's), so a
decoded state encodes again unchanged; the fields decode adds beside the state (`rangeCount`,
`compression`, `entries`, `bytes`) are accepted and ignored. Any other field is refused: a
misspelt `ackd` would otherwise encode a state without its acknowledgments. Numbers must be
JSON integers (no `"3"`, `3.0` or `true`). A mistake is reported as one line naming the file,
the path inside the document and what was expected there.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from core.errors import DecodeError

Id = Annotated[int, Field(ge=0)]
EntryBefore = Annotated[int, Field(ge=-1)]  # -1: before the ledger's first entry


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class PositionDoc(_Strict):
    ledgerId: Id
    entryId: EntryBefore


class BatchDoc(_Strict):
    ledgerId: Id
    entryId: Id
    deleteSet: list[int]  # the batch's BitSet as int64 words, set bits still to deliver


class BitsetDoc(_Strict):
    key: Id  # a data ledger
    values: list[int]  # its acknowledged entries as a BitSet of int64 words


class _StateDoc(_Strict):
    individualDeletedMessages: list[tuple[Id, EntryBefore, Id, Id]] = []
    individualDeletedMessageRanges: list[BitsetDoc] = []
    acked: list[tuple[Id, Id, Id]] = []
    batchedEntryDeletionIndexInfo: list[BatchDoc] = []
    properties: dict[str, int] = {}
    # Printed by `decode --json` beside the state; read back and ignored.
    rangeCount: int | None = None
    compression: str | None = None
    entries: int | None = None
    bytes: int | None = None


class PositionInfoDoc(_StateDoc):
    kind: Literal["position-info"] = "position-info"
    markDelete: PositionDoc


class CursorInfoDoc(_StateDoc):
    kind: Literal["cursor-info"] = "cursor-info"
    cursorsLedgerId: Annotated[int, Field(ge=-1)] = -1
    markDelete: PositionDoc | None = None
    lastActive: Id | None = None
    cursorProperties: dict[str, str] = {}


_Doc = TypeVar("_Doc", PositionInfoDoc, CursorInfoDoc)

_SHAPES = {
    "kind": '"position-info" or "cursor-info", as --kind says',
    "markDelete": '{"ledgerId": int >= 0, "entryId": int >= -1}',
    "individualDeletedMessages": "[[lowerLedger, lowerEntry, upperLedger, upperEntry], ...]"
    " (open-closed, lower before upper)",
    "individualDeletedMessageRanges": '[{"key": ledgerId, "values": [int64 words]}, ...]',
    "acked": "[[ledgerId, firstEntry, lastEntry], ...] with firstEntry <= lastEntry",
    "batchedEntryDeletionIndexInfo": '[{"ledgerId": int, "entryId": int, "deleteSet":'
    " [int64 words]}, ...]",
    "properties": '{"name": integer, ...}',
    "cursorProperties": '{"name": "text", ...}',
    "cursorsLedgerId": "an integer >= -1",
    "lastActive": "milliseconds since the epoch, an integer >= 0",
}


def parse_position_info(text: str | bytes, source: str) -> PositionInfoDoc:
    doc = _validated(PositionInfoDoc, text, source)
    _check_order(doc, source)
    return doc


def parse_cursor_info(text: str | bytes, source: str) -> CursorInfoDoc:
    doc = _validated(CursorInfoDoc, text, source)
    _check_order(doc, source)
    return doc


def _validated(model: type[_Doc], text: str | bytes, source: str) -> _Doc:
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise DecodeError(f"{source}: {_message(model, errors[0])}{more}") from None


def _message(model: type[_StateDoc], error: ErrorDetails) -> str:
    loc, kind, got = error["loc"], error["type"], error.get("input")
    if kind == "json_invalid":
        return f"not JSON: {error['msg'].removeprefix('Invalid JSON: ')}"
    path = _path(loc)
    top = str(loc[0]) if loc else ""
    if not loc:
        return f"the document must be a JSON object, got {_shown(got)}"
    where = path
    if kind == "extra_forbidden":
        known = ", ".join(model.model_fields)
        return f"{where}: unknown field; the fields are {known}"
    if top == "kind" and len(loc) == 1:
        wanted = model.model_fields["kind"].default
        return f"kind is {_shown(got)}, but --kind is {wanted}"
    expected = _SHAPES.get(top, "")
    if kind == "missing":
        what = f"{where} is missing" if len(loc) == 1 else f"{where}: missing"
        return f"{what}; expected {expected}" if expected else what
    detail = error["msg"][0].lower() + error["msg"][1:]
    text = f"{where}: {detail}, got {_shown(got)}"
    return f"{text}; expected {expected}" if expected and len(loc) <= 2 else text


def _path(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_order(doc: _StateDoc, source: str) -> None:
    """Ranges that end before they start: one vectorised pass, the first one reported."""
    if doc.acked:
        acked = np.array(doc.acked, np.int64)
        bad = np.flatnonzero(acked[:, 1] > acked[:, 2])
        if len(bad):
            i = int(bad[0])
            raise DecodeError(
                f"{source}: acked[{i}]: firstEntry is after lastEntry in {_shown(doc.acked[i])}; "
                f"expected {_SHAPES['acked']}"
            )
    if doc.individualDeletedMessages:
        ranges = np.array(doc.individualDeletedMessages, np.int64)
        lower_first = (ranges[:, 0] < ranges[:, 2]) | (
            (ranges[:, 0] == ranges[:, 2]) & (ranges[:, 1] < ranges[:, 3])
        )
        bad = np.flatnonzero(~lower_first)
        if len(bad):
            i = int(bad[0])
            raise DecodeError(
                f"{source}: individualDeletedMessages[{i}]: lower is not before upper in "
                f"{_shown(doc.individualDeletedMessages[i])}; expected "
                f"{_SHAPES['individualDeletedMessages']}"
            )
