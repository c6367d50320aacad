"""The first job over an input: its rows counted, malformed and id-less rows refused.

One aggregation job, the one that counts the rows anyway: a JSON-lines input's malformed
lines (`files.CORRUPT`) are counted there, so a good file is read no more than before; a bad
one is then read in Python up to its first bad line (`audit.scan.json_lines`) to say where and why.
An input the driver read itself (the embedded store, one local file) comes with its figures
(`Known`) and runs no job: the same checks, on the rows as read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import StructType

from audit.errors import AuditError, spark_job
from audit.scan.files import CORRUPT, is_json
from audit.scan.json_lines import MAX_SHOWN, first_bad_line


@dataclass(frozen=True)
class Known:
    """An input's figures, counted on the driver as it read the rows: `checked_rows`'s."""

    rows: int
    invalid: int  # rows without a valid ledger id (null or negative)
    span: tuple[int, int] | None  # smallest and largest id, nulls aside

    @classmethod
    def of(cls, ids: Iterable[int | None]) -> Known:
        given = list(ids)
        present = [ledger_id for ledger_id in given if ledger_id is not None]
        invalid = len(given) - len(present) + sum(ledger_id < 0 for ledger_id in present)
        return cls(len(given), invalid, (min(present), max(present)) if present else None)


class Scan(NamedTuple):
    """A scanned input: its rows, and their figures if the driver read them (else None)."""

    frame: DataFrame
    known: Known | None = None


def checked_rows(
    frame: DataFrame,
    what: str,
    source: Path | None = None,
    schema: StructType | None = None,
    ids_required: bool = True,
    known: Known | None = None,
) -> tuple[DataFrame, int, tuple[int, int] | None]:
    """`frame` without the malformed-line column, its row count, and its smallest and largest
    ledger id (None: none, nulls aside), from one job, or none when they are `known`;
    `source` the file it was read from (None: a scan), `schema` what its lines must hold."""
    if known is not None:  # read on the driver: no malformed lines, its ids counted as read
        if ids_required and known.invalid:
            raise AuditError(_problem(what, source, schema, ids_required, 0, None))
        return frame, known.rows, known.span
    ids = sf.col("ledger_id")
    invalid = ids.isNull() | (ids < 0)  # read even when allowed: Spark refuses a query of
    # a JSON file that reads its malformed-line column alone
    figures = [
        sf.count(sf.lit(1)).alias("rows"),
        sf.count_if(invalid).alias("bad"),
        sf.min(ids).alias("min_id"),
        sf.max(ids).alias("max_id"),
    ]
    corrupt = CORRUPT in frame.columns
    if corrupt:
        figures.append(sf.count_if(sf.col(CORRUPT).isNotNull()).alias("corrupt"))
        figures.append(sf.first(CORRUPT, ignorenulls=True).alias("sample"))
    # collect, not first: a global aggregation has one row, and `first` (a limit) plans it as
    # several jobs, each scanning more partitions (5 jobs for the demo's 42 ledgers).
    (row,) = spark_job(what, frame.agg(*figures).collect)
    malformed = int(row["corrupt"]) if corrupt else 0
    if malformed or (ids_required and row["bad"]):
        raise AuditError(_problem(what, source, schema, ids_required, malformed, row["sample"]))
    span = None if row["min_id"] is None else (int(row["min_id"]), int(row["max_id"]))
    return (frame.drop(CORRUPT) if corrupt else frame), int(row["rows"]), span


def _problem(
    what: str,
    source: Path | None,
    schema: StructType | None,
    ids_required: bool,
    malformed: int,
    sample: str | None,
) -> str:
    if source is not None and schema is not None and is_json(source):
        located = first_bad_line(source, schema, ("ledger_id",) if ids_required else ())
        if located is not None:
            more = f" ({malformed:,} malformed lines in all)" if malformed > 1 else ""
            return f"{located}{more}; audit aborted"
    if malformed:
        shown = (sample or "").strip()[:MAX_SHOWN]
        lines = "line is" if malformed == 1 else "lines are"
        return f"{what}: {malformed:,} {lines} not valid JSON of the expected shape, e.g. {shown!r}"
    return f"{what}: rows without a valid ledger_id; audit aborted"
