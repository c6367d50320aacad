"""The first job over an input: its rows counted, malformed and id-less rows refused.

One aggregation job, the one that counts the rows anyway: a JSON-lines input's malformed
lines (`files.CORRUPT`) are counted there, so a good file is read no more than before; a bad
one is then read in Python up to its first bad line (`audit.scan.json_lines`) to say where and why.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import StructType

from audit.errors import AuditError, spark_job
from audit.scan.files import CORRUPT, is_json
from audit.scan.json_lines import MAX_SHOWN, first_bad_line


def checked_rows(
    frame: DataFrame,
    what: str,
    source: Path | None = None,
    schema: StructType | None = None,
    ids_required: bool = True,
) -> tuple[DataFrame, int]:
    """`frame` without the malformed-line column, and its row count; `source` the file it
    was read from (None: a scan), `schema` what its lines must hold."""
    ids = sf.col("ledger_id")
    invalid = ids.isNull() | (ids < 0)  # read even when allowed: Spark refuses a query of
    # a JSON file that reads its malformed-line column alone
    figures = [sf.count(sf.lit(1)).alias("rows"), sf.count_if(invalid).alias("bad")]
    corrupt = CORRUPT in frame.columns
    if corrupt:
        figures.append(sf.count_if(sf.col(CORRUPT).isNotNull()).alias("corrupt"))
        figures.append(sf.first(CORRUPT, ignorenulls=True).alias("sample"))
    row = spark_job(what, frame.agg(*figures).first)
    assert row is not None  # a global aggregation has one row
    malformed = int(row["corrupt"]) if corrupt else 0
    if malformed or (ids_required and row["bad"]):
        raise AuditError(_problem(what, source, schema, ids_required, malformed, row["sample"]))
    return (frame.drop(CORRUPT) if corrupt else frame), int(row["rows"])


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
