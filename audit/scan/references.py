"""The references: every ledger Pulsar's metadata points at, scanned on Spark.

The driver lists the namespaces; one stage lists each namespace's topics and schemas, a
second (after a repartition, so one crowded namespace is spread out) reads each topic's
metadata. Each partition opens its own metadata store. Any error fails the job, and the
audit with it. The embedded store is one local file: the driver reads it, as it reads the
embedded ledgers (`audit.scan.ledgers`), and counts what it read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from audit.scan import pulsar_refs
from audit.scan.input_check import Scan
from audit.scan.local_rows import driver_scan
from audit.schema import SCANNED_REFERENCE_SCHEMA
from deletion.adapters.opening import StoreSpec, open_metadata_store
from deletion.domain.ports import MetadataStore

TopicItem = tuple[str, str, str, str]


def _open(spec: StoreSpec) -> MetadataStore:
    # Pulsar's roots are checked again by each opening: the driver checked them first.
    return open_metadata_store(spec)


def _topics(spec: StoreSpec, namespaces: Iterable[tuple[str, str]]) -> Iterator[TopicItem]:
    store = _open(spec)
    try:
        for tenant, namespace in namespaces:
            yield from pulsar_refs.topics(store, tenant, namespace)
    finally:
        store.close()


def _references(spec: StoreSpec, items: Iterable[TopicItem]) -> Iterator[pulsar_refs.ReferenceRow]:
    store = _open(spec)
    try:
        for root, tenant, namespace, encoded in items:
            yield from pulsar_refs.references(store, root, tenant, namespace, encoded)
    finally:
        store.close()


def metadata_references(spark: SparkSession, spec: StoreSpec) -> Scan:
    """Every reference: read on the executors, or on the driver from the embedded store."""
    store = _open(spec)
    try:
        namespaces = pulsar_refs.namespaces(store)
        if spec.embedded:
            rows = [
                row
                for tenant, namespace in namespaces
                for item in pulsar_refs.topics(store, tenant, namespace)
                for row in pulsar_refs.references(store, *item)
            ]
            return driver_scan(spark, rows, SCANNED_REFERENCE_SCHEMA)
    finally:
        store.close()
    return Scan(_scanned(spark, spec, namespaces))


def _scanned(spark: SparkSession, spec: StoreSpec, namespaces: list[tuple[str, str]]) -> DataFrame:
    context = spark.sparkContext
    wanted = max(8, context.defaultParallelism * 4)
    topics: Any = context.parallelize(namespaces, max(1, min(len(namespaces), wanted)))
    rows = (
        topics.mapPartitions(partial(_topics, spec))
        .repartition(wanted)
        .mapPartitions(partial(_references, spec))
    )
    return spark.createDataFrame(rows, SCANNED_REFERENCE_SCHEMA)
