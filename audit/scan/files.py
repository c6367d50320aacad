"""Inventory and reference files (JSON lines or Parquet) in, the Parquet report out.

The file schemas are documented in `audit.schema`. A Parquet input is a file or a dataset
directory. JSON lines are read PERMISSIVE with the malformed lines' text in `CORRUPT`, which
`audit.scan.input_check` counts in the job that counts the rows anyway: a malformed line aborts the
audit with its file and line number, not a JVM stack trace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from audit.errors import AuditError, spark_job
from audit.schema import INVENTORY_SCHEMA, REFERENCE_SCHEMA

_JSON_SUFFIXES = {".json", ".jsonl", ".ndjson"}
_PARQUET_SUFFIXES = {".parquet", ".pq"}
_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_METADATA = MapType(StringType(), StringType())
REFERENCE_FILE_SCHEMA = StructType([f for f in REFERENCE_SCHEMA.fields if f.name != "namespace"])
CORRUPT = "_corrupt_record"  # a JSON input's malformed line, null on a good one


def is_json(path: Path) -> bool:
    return path.is_file() and path.suffix in _JSON_SUFFIXES


def check_input(path: Path) -> None:
    """Refuse a missing, unnamed or non-Parquet input before any Spark work (Spark would take
    half a minute to start, then fail with a JVM stack trace)."""
    if not path.exists():
        raise AuditError(f"no such file: {path}")
    if not (path.is_dir() or path.suffix in _PARQUET_SUFFIXES or path.suffix in _JSON_SUFFIXES):
        raise AuditError(f"{path}: name it *.parquet (or a Parquet directory) or *.jsonl / *.json")
    if path.is_dir():
        parts = parquet_parts(path)
        if not parts:
            raise AuditError(f"{path}: a directory with no Parquet file in it")
        for part in parts:
            _check_parquet(part)
    elif path.suffix in _PARQUET_SUFFIXES:
        _check_parquet(path)


def parquet_parts(directory: Path) -> list[Path]:
    """A dataset directory's data files, as Spark lists them: names starting with `_` or `.`
    (`_SUCCESS`, `.part-0.crc`) are not data; partition directories (`status=orphan`) are."""
    return sorted(
        found
        for found in directory.rglob("*")
        if found.is_file()
        and not any(part.startswith(("_", ".")) for part in found.relative_to(directory).parts)
    )


PARQUET_MAGIC = b"PAR1"


def _check_parquet(path: Path) -> None:
    """A Parquet file starts and ends with `PAR1`, the footer's length before the last
    (apache/parquet-format README, "File format")."""
    try:
        with path.open("rb") as file:
            head = file.read(4)
            size = file.seek(0, 2)
            file.seek(max(size - 4, 0))
            tail = file.read(4)
    except OSError as exc:
        raise AuditError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if size < 12 or head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        raise AuditError(
            f"{path} is not a Parquet file (no PAR1 at its start and end); a JSON-lines input "
            "is named *.jsonl"
        )


def _read(spark: SparkSession, path: Path, json_schema: StructType) -> DataFrame:
    check_input(path)
    if not is_json(path):
        return spark_job(f"reading {path}", lambda: spark.read.parquet(str(path)))
    with_corrupt = StructType([*json_schema.fields, StructField(CORRUPT, StringType())])
    return (
        spark.read.schema(with_corrupt)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .json(str(path))
    )


def _corrupt(frame: DataFrame) -> list[Column]:
    return [sf.col(CORRUPT)] if CORRUPT in frame.columns else []


def _column(frame: DataFrame, name: str, wanted: DataType, path: Path, required: bool) -> Column:
    """The column cast to `wanted`, refusing types that would lose meaning."""
    fields = {f.name: f.dataType for f in frame.schema.fields}
    if name not in fields:
        if required:
            raise AuditError(f"{path}: no column {name!r}")
        return sf.lit(None).cast(wanted).alias(name)
    actual = fields[name]
    integral = isinstance(wanted, LongType) and isinstance(actual, _INTEGRAL)
    if actual != wanted and not integral:
        raise AuditError(
            f"{path}: column {name!r} is {actual.simpleString()}, not {wanted.simpleString()}"
        )
    return sf.col(name).cast(wanted).alias(name)


def read_inventory(spark: SparkSession, path: Path) -> DataFrame:
    frame = _read(spark, path, INVENTORY_SCHEMA)
    return frame.select(
        _column(frame, "ledger_id", LongType(), path, required=True),
        _column(frame, "ctime_ms", LongType(), path, required=True),
        _column(frame, "custom_metadata", _METADATA, path, required=True),
        _column(frame, "size", LongType(), path, required=False),
        *_corrupt(frame),
    )


def read_references(spark: SparkSession, path: Path) -> DataFrame:
    frame = _read(spark, path, REFERENCE_FILE_SCHEMA)
    topic = _column(frame, "topic", StringType(), path, required=False)
    deleted = _column(frame, "bookkeeper_deleted", BooleanType(), path, required=False)
    with_topic = frame.select(
        _column(frame, "ledger_id", LongType(), path, required=True),
        topic,
        _column(frame, "component", StringType(), path, required=False),
        sf.coalesce(deleted, sf.lit(False)).alias("bookkeeper_deleted"),
        *_corrupt(frame),
    )
    namespace = sf.regexp_extract("topic", r"^([^/]+/[^/]+)/", 1)
    return with_topic.select(
        "ledger_id",
        "topic",
        sf.when(namespace != "", namespace).alias("namespace"),
        "component",
        "bookkeeper_deleted",
        *_corrupt(with_topic),
    )


def write_report(
    output: Path,
    classified: DataFrame,
    dangling: DataFrame,
    summary: DataFrame,
    figures: Mapping[str, Any],
) -> None:
    """`unreferenced/status=*/` (orphans, unattributable, foreign, young listed apart),
    `dangling/`, `summary/` as Parquet, and `audit.json` with the figures."""
    output.mkdir(parents=True, exist_ok=True)
    classified.write.mode("overwrite").partitionBy("status").parquet(str(output / "unreferenced"))
    dangling.coalesce(1).write.mode("overwrite").parquet(str(output / "dangling"))
    summary.coalesce(1).write.mode("overwrite").parquet(str(output / "summary"))
    (output / "audit.json").write_text(json.dumps(dict(figures), indent=2) + "\n")
