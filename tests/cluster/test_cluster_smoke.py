"""The cluster the scenario tests run on, as they will use it: topics served by both brokers,
messages produced through one broker and consumed through the other, a sidecar next to each
broker reading that broker's own broker.conf, and an audit that finds nothing to delete in a
namespace that leaked nothing. Start-up, memory and stop are printed (conftest)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pulsar

from deletion.domain.topics import DELETION_TOPIC, NamespaceName, TopicName
from harness.process import wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster
from harness.pulsar_cluster.workload import client
from tests.cluster import rig

PARTITIONS = 16  # over the namespace's 4 bundles, which the 2 brokers share


def test_both_brokers_serve_a_partitioned_topic_and_each_has_its_sidecar(
    sidecars: PulsarCluster,
    cluster_admin: ClusterAdmin,
    cluster_namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    cluster = sidecars
    print(cluster.report())
    topic = TopicName(cluster_namespace, "spread")
    cluster_admin.create_partitioned(topic, PARTITIONS)
    partitions = [TopicName(cluster_namespace, f"spread-partition-{i}") for i in range(PARTITIONS)]
    for partition in partitions:
        cluster_admin.owner_url(partition)  # every bundle holding one now has an owner
    # The load manager may have put every bundle on one broker (it does after a restart):
    # half of them go to the other.
    ids = [broker.broker_id for broker in cluster.brokers]
    cluster_admin.spread(cluster.cluster_name, cluster_namespace, ids)
    owners = {cluster_admin.owner_url(partition) for partition in partitions}
    assert owners == {broker.service_url for broker in cluster.brokers}, owners

    # Produced through the first broker, consumed through the second: lookups route both.
    sent = [f"m-{i}".encode() for i in range(4 * PARTITIONS)]
    first = client(cluster, tmp_path / "client.log", cluster.brokers[0].service_url)
    second = client(cluster, tmp_path / "client.log", cluster.brokers[1].service_url)
    try:
        consumer = second.subscribe(
            topic.full_name, "smoke", initial_position=pulsar.InitialPosition.Earliest
        )
        producer = first.create_producer(topic.full_name, batching_enabled=False)
        for payload in sent:
            producer.send(payload)
        received: list[bytes] = []
        while len(received) < len(sent):
            message = consumer.receive(60_000)
            received.append(message.data())
            consumer.acknowledge(message)
        assert sorted(received) == sorted(sent)
    finally:
        first.close()
        second.close()

    # A sidecar next to each broker, run as an operator runs it: `-c` that broker's file.
    # One after the other: two sidecars setting up a new namespace at the same moment make
    # the broker store its schema several times and record one, leaking the other ledgers
    # (Pulsar's BookkeeperSchemaStorage.putSchema retries a lost race without deleting the
    # ledger it wrote); the audit below would find them, rightly.
    deletion = TopicName(cluster_namespace, DELETION_TOPIC)
    for count, sidecar in enumerate(cluster.sidecars, start=1):
        sidecar.start(deletionNamespaces=str(cluster_namespace))
        subscribed = partial(rig.consumers_everywhere, cluster_admin, deletion, count)
        wait_until(subscribed, 180, f"{count} sidecars on every deletion partition", poll=1)
    for sidecar, own in zip(cluster.sidecars, cluster.brokers, strict=True):
        assert sidecar.running, sidecar.log_tail()
        started = [line for line in _log_lines(sidecar.log_text()) if "broker_url" in line]
        assert started, sidecar.log_tail()
        assert (started[-1]["broker_url"], started[-1]["admin_url"]) == (
            own.service_url,
            own.web_url,
        )
        assert started[-1]["metadata_store"] == cluster.metadata_url

    # The audit, as an operator runs it, against the brokers' own view read after it: it may
    # find ledgers Pulsar itself leaked (a schema stored twice, by two brokers whose caches
    # had not yet seen the other's), never one a broker references.
    found = _audited_orphans(cluster, cluster_namespace, tmp_path / "report")
    print("orphans the audit found in the namespace (ledger, topic, component):", found)
    referenced = _referenced(cluster_admin, cluster_namespace)
    assert referenced, "the namespace's topics reference no ledger?"
    assert not {ledger for ledger, _, _ in found} & referenced, (found, sorted(referenced))

    for sidecar in cluster.sidecars:
        assert sidecar.stop() == 0, sidecar.log_tail()


def _log_lines(text: str) -> list[dict[str, Any]]:
    """The sidecar's JSON log lines (the harness's own marker lines are not JSON)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _referenced(admin: ClusterAdmin, namespace: NamespaceName) -> set[int]:
    """Every ledger the brokers say a topic of `namespace` uses (system topics too): data,
    cursors, schema versions, compacted view, from each topic's internalStats."""
    found: set[int] = set()
    for name in admin.get(f"/admin/v2/persistent/{namespace}?includeSystemTopic=true"):
        stats = admin.internal_stats(TopicName.parse(name))
        found |= {ledger["ledgerId"] for ledger in stats["ledgers"]}
        found |= {cursor["cursorLedger"] for cursor in stats["cursors"].values()}
        found |= {ledger["ledgerId"] for ledger in stats.get("schemaLedgers", [])}
        found.add(stats.get("compactedLedger", {}).get("ledgerId", -1))
    return {ledger for ledger in found if ledger >= 0}


def _audited_orphans(
    cluster: PulsarCluster, namespace: NamespaceName, report: Path
) -> list[tuple[int, str, str]]:
    """`ledger-janitor audit -c <broker.conf>` as an operator runs it (Spark local[2]): the
    orphans it reports in `namespace`, (ledger, topic, component)."""
    print("audit:", json.dumps(rig.audit(cluster, "--min-age", "5s", "--output", str(report))))
    relation = duckdb.sql(
        f"SELECT ledger_id, topic, component FROM '{report}/unreferenced/**/*.parquet' "
        f"WHERE status = 'orphan' AND namespace = '{namespace}'"
    )
    rows = [] if relation is None else relation.fetchall()
    return [(int(ledger), str(topic), str(component)) for ledger, topic, component in rows]
