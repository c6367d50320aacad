"""The references: every ledger Pulsar's metadata points at, scanned on Spark.

The driver lists the namespaces; one stage lists each namespace's topics and schemas, a
second (after a repartition, so one crowded namespace is spread out) reads each topic's
metadata. Each partition opens its own metadata store. Any error fails the job, and the
audit with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from audit import pulsar_refs
from audit.errors import AuditError
from audit.ledger_scan import ZooKeeperTarget
from audit.schema import REFERENCE_SCHEMA
from config import StoreUrl
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.ports import MetadataStore

TopicItem = tuple[str, str, str, str]


@dataclass(frozen=True)
class StoreSpec:
    """How an executor opens the metadata store: picklable, and never creates anything."""

    url: StoreUrl
    timeout: float = 30.0

    def open(self) -> MetadataStore:
        if self.url.scheme == "zk":
            target = ZooKeeperTarget(self.url.hosts + self.url.chroot, self.timeout)
            return ZooKeeperMetadataStore(target.connect(), owns_client=True)
        if not Path(self.url.path).is_file():
            raise AuditError(f"no embedded metadata store at {self.url.path}")
        return SqliteMetadataStore(self.url.path)


def _topics(spec: StoreSpec, namespaces: Iterable[tuple[str, str]]) -> Iterator[TopicItem]:
    store = spec.open()
    try:
        for tenant, namespace in namespaces:
            yield from pulsar_refs.topics(store, tenant, namespace)
    finally:
        store.close()


def _references(spec: StoreSpec, items: Iterable[TopicItem]) -> Iterator[pulsar_refs.ReferenceRow]:
    store = spec.open()
    try:
        for root, tenant, namespace, encoded in items:
            yield from pulsar_refs.references(store, root, tenant, namespace, encoded)
    finally:
        store.close()


def metadata_references(spark: SparkSession, spec: StoreSpec) -> DataFrame:
    context = spark.sparkContext
    store = spec.open()
    try:
        namespaces = pulsar_refs.namespaces(store)
    finally:
        store.close()
    wanted = max(8, context.defaultParallelism * 4)
    topics: Any = context.parallelize(namespaces, max(1, min(len(namespaces), wanted)))
    rows = (
        topics.mapPartitions(partial(_topics, spec))
        .repartition(wanted)
        .mapPartitions(partial(_references, spec))
    )
    return spark.createDataFrame(rows, REFERENCE_SCHEMA)
