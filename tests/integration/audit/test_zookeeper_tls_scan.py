"""The audit over ZooKeeper TLS: the driver ships metadataStoreConfigPath's PEM paths in the
StoreSpec, and the Spark executors' own kazoo clients connect with them (a real ZooKeeper
with TLS only and client certificates required)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from audit.scan.ledgers import ZooKeeperTarget, zookeeper_inventory
from config import ServiceConfiguration
from config.zookeeper_tls import ZooKeeperTls
from deletion.adapters.opening import StoreSpec
from deletion.wire import bookkeeper_metadata as bk
from harness.janitor import chrooted
from harness.zookeeper_tls_fixtures import Secured, client_file
from tests.integration.audit.planting import ledger_metadata


def test_the_executors_scan_the_ledgers_over_tls(
    spark: SparkSession, secured: Secured, chroot: str, tmp_path: Path
) -> None:
    server, tls, _ = secured
    url = f"zk:{server.hosts}{chroot}"
    store = chrooted(server.hosts, chroot, ZooKeeperTls(str(tls.client_store), str(tls.ca_file)))
    ids = list(range(1, 41))
    try:
        for ledger_id in ids:
            store.create(bk.ledger_path(ledger_id), ledger_metadata({"application": b"pulsar"}))
    finally:
        store.close()
    config = ServiceConfiguration(
        metadata_store_url=url,
        metadata_store_config_path=str(client_file(tmp_path, tls.client_store, tls.ca_file)),
    )
    spec = StoreSpec.ledgers(config)
    assert spec.tls == ZooKeeperTls(str(tls.client_store), str(tls.ca_file))
    rows = zookeeper_inventory(spark, ZooKeeperTarget(spec)).collect()
    assert sorted(row["ledger_id"] for row in rows) == ids
