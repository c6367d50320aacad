"""Which line of a JSON-lines input is wrong, and why: the audit's one-line error.

Spark reads JSON lines in PERMISSIVE mode and counts the malformed rows in the job that counts
the rows anyway (`audit.scan.input_check`), so a good file costs nothing more. Only when that job
finds a bad row is the file read here, in Python, up to the first line that Spark's reader
would refuse: a JSON syntax error, a value of the wrong type, a missing or negative id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql.types import BooleanType, DataType, LongType, MapType, StructType

MAX_SHOWN = 80  # characters of a bad line quoted in the error


def _type_problem(value: Any, wanted: DataType) -> str | None:
    """Why Spark's JSON reader would refuse `value` for a column of type `wanted`."""
    if value is None:
        return None
    if isinstance(wanted, LongType):
        ok = isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
        return None if ok else "a whole number"
    if isinstance(wanted, BooleanType):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(wanted, MapType):
        return None if isinstance(value, dict) else "an object"
    return None  # a string column takes any JSON value, as its text


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def line_problem(line: str, schema: StructType, required: Iterable[str]) -> str | None:
    """Why one non-blank line is refused; None when Spark would read it."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(row, Mapping):
        return f"not a JSON object but {_shown(row)}"
    for name in required:
        if row.get(name) is None:
            return f"no {name}"
    for field in schema.fields:
        value = row.get(field.name)
        wanted = _type_problem(value, field.dataType)
        if wanted is not None:
            return f"{field.name} is {_shown(value)}, not {wanted}"
    if isinstance(row.get("ledger_id"), int) and row["ledger_id"] < 0:
        return f"ledger_id {row['ledger_id']} is negative"
    return None


def first_bad_line(path: Path, schema: StructType, required: Iterable[str]) -> str | None:
    """`NAME line N: why` for the first line Spark would refuse; None if none is found."""
    needed = tuple(required)
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue  # Spark skips blank lines
            problem = line_problem(line, schema, needed)
            if problem is not None:
                return f"{path.name} line {number:,}: {problem}"
    return None
