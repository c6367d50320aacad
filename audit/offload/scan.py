"""The offloaded objects, listed on Spark like the ZooKeeper scan lists the references.

S3: the keys Pulsar writes start with a UUID, so the 256 two-hex-digit key prefixes split
the bucket evenly; they are the partitions' work, each partition listing its prefixes with
a client of its own. Filesystem: the `tenant/namespace` directories under the base path.
Any error fails the job, and the audit with it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from audit.offload.objects import mapfiles, namespace_dirs, s3_objects
from audit.offload.targets import OffloadTargets
from audit.schema import OFFLOADED_OBJECT_SCHEMA

HEX = "0123456789abcdef"
S3_PREFIXES = [a + b for a in HEX for b in HEX]


def offloaded_objects(spark: SparkSession, targets: OffloadTargets) -> DataFrame:
    """Every offloaded object of the configured stores (schema.OFFLOADED_OBJECT_SCHEMA)."""
    context = spark.sparkContext
    wanted = max(8, context.defaultParallelism * 4)
    frame = spark.createDataFrame([], OFFLOADED_OBJECT_SCHEMA)
    if targets.s3 is not None:
        prefixes: Any = context.parallelize(S3_PREFIXES, wanted)
        rows = prefixes.mapPartitions(partial(_s3_partition, targets.s3))
        frame = frame.unionByName(spark.createDataFrame(rows, OFFLOADED_OBJECT_SCHEMA))
    if targets.filesystem is not None:
        namespaces = namespace_dirs(targets.filesystem)
        if namespaces:
            dirs: Any = context.parallelize(namespaces, max(1, min(len(namespaces), wanted)))
            rows = dirs.mapPartitions(partial(_mapfile_partition, targets.filesystem))
            frame = frame.unionByName(spark.createDataFrame(rows, OFFLOADED_OBJECT_SCHEMA))
    return frame


def _s3_partition(target: Any, prefixes: Any) -> Any:
    return s3_objects(target, list(prefixes))


def _mapfile_partition(target: Any, namespaces: Any) -> Any:
    return mapfiles(target, list(namespaces))
