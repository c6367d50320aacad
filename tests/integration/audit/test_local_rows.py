"""Rows the driver read become the DataFrame `createDataFrame` makes, with no Python task."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from audit.scan.local_rows import local_frame
from audit.schema import INVENTORY_SCHEMA, SCANNED_REFERENCE_SCHEMA

INVENTORY = [
    (1, 1_700_000_000_000, {"application": "pulsar", "pulsar/managed-ledger": "t/n/é ü"}, None),
    (2**63 - 1, None, None, 5),
    (0, -1, {}, 0),
]
REFERENCES = [
    (7, "t/n/topic", "t/n", "MANAGED_LEDGER", False, None, None, None, None, None, None),
    (8, "t/n/x", "t/n", "MANAGED_LEDGER", True, "uuid-1", True, "S3", "bucket", 10, 2048),
]
MANY = [(i, i * 3, {"k": str(i)}, i % 7 or None) for i in range(5_000)]  # several batches


def _lineage(frame: DataFrame) -> str:
    return str(frame._jdf.queryExecution().toRdd().toDebugString())


def _rows(frame: DataFrame) -> list[dict[str, Any]]:
    return sorted((row.asDict() for row in frame.collect()), key=lambda r: r["ledger_id"])


@pytest.mark.parametrize(
    ("rows", "schema"),
    [(INVENTORY, INVENTORY_SCHEMA), (REFERENCES, SCANNED_REFERENCE_SCHEMA),
     (MANY, INVENTORY_SCHEMA), ([], INVENTORY_SCHEMA)],
    ids=["inventory", "references", "5,000 rows", "none"],
)  # fmt: skip
def test_the_frame_is_createDataFrame_s_without_a_python_task(
    spark: SparkSession, rows: list[tuple[Any, ...]], schema: StructType
) -> None:
    made = local_frame(spark, rows, schema)
    expected = spark.createDataFrame(rows, schema)

    assert made.schema == expected.schema
    assert _rows(made) == _rows(expected)
    assert len(_rows(made)) == len(rows)
    # PySpark's own path maps the rows through Python once more (a Python worker to start)
    assert "PythonRDD[" in _lineage(expected)
    assert "PythonRDD[" not in _lineage(made)
