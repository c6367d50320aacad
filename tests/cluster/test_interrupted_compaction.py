"""A compaction cut off by its broker's death, on the real cluster (deletion/domain/kinds.py):
phase two has created its compacted ledger when every bookie is paused (SIGSTOP: its writes
hang) and the topic's broker is SIGKILLed; the bookies resume and the broker starts again. The
ledger the compactor made is recorded nowhere: a leak Pulsar never reclaims.

It is kept while a compaction could still record it: the topic's `__compaction` cursor has
recorded nothing above it. Once a later compaction is recorded above it (and the cursor has
closed since, so its znode says so: an unload, as every rollout does), the audit finds it and
a sidecar deletes it; the compacted view then still reads back whole.

The oracle is the cluster: its ZooKeeper read raw (the ledgers and their custom metadata), the
broker's internalStats and the view it serves."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pulsar
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from deletion.domain.topics import NamespaceName, TopicName
from harness.process import wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster, workload
from harness.pulsar_cluster.cluster import in_parallel
from tests.cluster import rig as cluster_rig
from tests.real_pulsar import rig

KEYS = 20_000  # distinct keys, batched: phase two rewrites every batch
VALUE = b"v" * 512
ATTEMPTS = 3


def _send(client: pulsar.Client, topic: TopicName, generation: int, keys: int) -> dict[str, bytes]:
    producer = client.create_producer(
        topic.full_name, batching_enabled=True, batching_max_messages=500,
        batching_max_publish_delay_ms=50, block_if_queue_full=True,
    )  # fmt: skip
    sent = {f"k{i}": VALUE + f"-{generation}-{i}".encode() for i in range(keys)}
    for key, value in sent.items():
        producer.send_async(value, None, partition_key=key)
    producer.flush()
    producer.close()
    return sent


def _compacted_ledgers(zk: KazooClient, topic: TopicName, known: dict[int, str]) -> set[int]:
    """The ledgers whose metadata says a compaction of `topic` made them (`known`: a cache of
    each ledger's component and topic, read once)."""
    for ledger in rig.bookkeeper_ledgers(zk) - set(known):
        try:
            metadata = rig.ledger_metadata(zk, ledger)
        except NoNodeError:  # deleted meanwhile
            continue
        known[ledger] = f"{metadata.get('component')} {metadata.get('pulsar/compactedTopic')}"
    return {n for n, named in known.items() if named == f"compacted-ledger {topic.full_name}"}


def _cut_off(
    cluster: PulsarCluster, admin: ClusterAdmin, zk: KazooClient, topic: TopicName
) -> int | None:
    """Compact `topic`; the moment phase two's ledger appears in /ledgers, pause every bookie
    (its writes hang) and, if the compaction still runs, SIGKILL its broker, then resume the
    bookies and start the broker again. The ledger left, or None if the compaction ended
    first."""
    path = admin.topic_path(topic)
    known: dict[int, str] = {}
    before = _compacted_ledgers(zk, topic, known)
    owner = cluster.broker_at(admin.owner_url(topic))
    made = threading.Event()

    def watch() -> None:
        while not made.is_set():
            if _compacted_ledgers(zk, topic, known) - before:
                in_parallel(cluster.bookies, lambda bookie: bookie.pause())
                made.set()
                return
            time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()
    admin.put(f"{path}/compaction")
    try:
        assert made.wait(120), "no compacted ledger was made"
        status = admin.get(f"{path}/compaction")["status"]
        if status == "RUNNING":
            owner.kill()
    finally:
        made.set()
        in_parallel(cluster.bookies, lambda bookie: bookie.resume())
    if status != "RUNNING":
        return None
    owner.start()
    (left,) = _compacted_ledgers(zk, topic, known) - before
    return left


def test_a_compaction_cut_off_by_its_brokers_death_leaves_a_ledger_a_sidecar_deletes(
    pulsar_cluster: PulsarCluster, cluster_admin: ClusterAdmin, cluster_namespace: NamespaceName,
    zk: KazooClient, sidecars: PulsarCluster, tmp_path: Path,
) -> None:  # fmt: skip
    cluster, admin, ns = pulsar_cluster, cluster_admin, cluster_namespace
    client = workload.client(cluster, tmp_path / "client.log")
    try:
        # A slow machine may see a compaction end before it is caught: another topic then.
        for attempt in range(ATTEMPTS):
            topic = TopicName(ns, f"big-{attempt}")
            client.subscribe(topic.full_name, "keep").close()  # nothing trimmed under the test
            values = _send(client, topic, 1, KEYS)
            cut_off = _cut_off(cluster, admin, zk, topic)
            if cut_off is not None:
                break
            print(f"attempt {attempt}: the compaction of {topic} ended before it was cut off")
        assert cut_off is not None, f"no compaction caught running in {ATTEMPTS} attempts"
        path = admin.topic_path(topic)
        recorded = int(admin.internal_stats(topic).get("compactedLedger", {}).get("ledgerId", -1))
        assert recorded != cut_off, "the cut-off compaction was recorded"
        print(f"compaction cut off: ledger {cut_off} left, the topic reads {recorded}")

        # The topic moves on: newer values in a newer ledger, a compaction that completes, and
        # the namespace unloaded so that the `__compaction` cursor's znode records it.
        admin.put(f"{path}/unload")
        values |= _send(client, topic, 2, KEYS // 10)
        compacted = rig.compact(admin, topic)
        admin.put(f"/admin/v2/namespaces/{ns}/unload")

        for sidecar in cluster.sidecars:
            workload.start_sidecar(sidecar, [ns])
        figures = cluster_rig.audit(
            cluster, "--min-age", "1s", "--enqueue", "--set", f"deletionNamespaces={ns}",
            "--set", "sendDelaySecondsOfTwoPhaseDeletion=1",
        )  # fmt: skip
        print("audit:", json.dumps(figures))
        assert figures["orphans_by_component"].get("COMPACTED_LEDGER", 0) >= 1, figures
        wait_until(
            lambda: cut_off not in rig.bookkeeper_ledgers(zk), 240,
            f"the cut-off compaction's ledger {cut_off} deleted", poll=1,
        )  # fmt: skip
        deleted = {
            e["ledger_id"]
            for sidecar in cluster.sidecars
            for e in sidecar.events()
            if e["event"] == "deleted" and e.get("topic") == str(topic)
        }
        assert cut_off in deleted and compacted not in deleted, deleted
        for sidecar in cluster.sidecars:
            assert sidecar.stop() == 0, sidecar.log_tail()
        assert compacted in rig.bookkeeper_ledgers(zk)
        view = rig.compacted_view(client, topic)
        assert len(view) == KEYS and view == values
    finally:
        client.close()
