"""Rows the driver read (the embedded store's), as a DataFrame that needs no Python worker.

`spark.createDataFrame(rows, schema)` parallelizes the rows as pickled batches of one size
(`SparkContext.parallelize`: a BatchedSerializer), and then, because the JVM's reader is
declared with another serializer (`RDD._pickled`: an AutoBatchedSerializer), maps them through
a Python task that pickles them again unchanged (`RDD._reserialize`; PySpark's
pyspark/sql/session.py `_create_dataframe`, pyspark/core/rdd.py `_to_java_object_rdd`). On an
audit of the embedded store that task is the only Python one: starting a Python worker for it
cost the first job 0.7-1 s here, and stopping Spark then waited for the worker's accumulator
connection (0.7 s against 0.2-0.4; `bench.audit_small`). Both serializers write each batch as a
pickled list, which `SerDeUtil.pythonToJava(batched=True)` flattens alike; so the JVM reads
the parallelized batches as they are. These are PySpark's internals: where they are not as
expected, `createDataFrame` is used instead. The rows are not type-checked again (our scans
build them in the schema's types, as `InventoryRow` and `ReferenceRow` say).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.serializers import BatchedSerializer, CPickleSerializer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from audit.scan.input_check import Known, Scan


def driver_scan(spark: SparkSession, rows: Sequence[tuple[Any, ...]], schema: StructType) -> Scan:
    """Rows the driver read (their ledger id first), with their figures: no job counts them."""
    return Scan(local_frame(spark, rows, schema), Known.of(row[0] for row in rows))


def local_frame(
    spark: SparkSession, rows: Sequence[tuple[Any, ...]], schema: StructType
) -> DataFrame:
    """`spark.createDataFrame(rows, schema)`, its rows unpickled by the JVM directly."""
    context = spark.sparkContext
    internal = [schema.toInternal(row) for row in rows]
    parallelized: Any = context.parallelize(internal)
    written = getattr(parallelized, "_jrdd_deserializer", None)
    jvm, session = getattr(context, "_jvm", None), getattr(spark, "_jsparkSession", None)
    if (
        not isinstance(written, BatchedSerializer)
        or not isinstance(written.serializer, CPickleSerializer)
        or jvm is None
        or session is None
    ):
        return spark.createDataFrame(rows, schema)
    serde = jvm.SerDeUtil
    java_rows = serde.toJavaArray(serde.pythonToJava(parallelized._jrdd, True))
    return DataFrame(session.applySchemaToPythonRDD(java_rows.rdd(), schema.json()), spark)
