"""Delayed-delivery bucket snapshots on the real cluster (deletion/domain/kinds.py): the
brokers run BucketDelayedDeliveryTracker with buckets that seal after 50 messages
(harness/pulsar/cluster/broker.conf), so each Shared subscription with delayed messages
writes a snapshot ledger per sealed bucket and records it in its cursor's properties.

Leaked: the snapshots of a subscription deleted with its buckets (whatever the broker left of
them), and snapshots written and never recorded (a broker that crashed between the two;
planted with BookKeeper's own client and the metadata the broker writes, LeakMaker): one of a
range the subscription has acknowledged past, one of a range it has not. The audit finds
them and the sidecars delete what no tracker can read any more; the live subscription's
snapshots, and the unrecorded one its tracker could still be reading, are kept, even when
enqueued by hand. Then both brokers restart cold and every delayed message is delivered.

The oracle is the cluster: its ZooKeeper read raw (the ledgers, their custom metadata, the
cursor znode's properties parsed with Pulsar's own protobuf schema) and the messages the
brokers deliver."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pulsar
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo
from harness.java import JavaPrograms
from harness.process import run_cli, wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster, workload
from harness.pulsar_cluster.cluster import in_parallel
from harness.pulsar_cluster.leaks import managed_ledger_name, plant_buckets
from tests.cluster import rig as cluster_rig
from tests.real_pulsar import rig

BUCKET = "#pulsar.internal.delayed.bucket"
DELAYED = 200  # over 20 data ledgers of 10 entries: 3 sealed buckets (of 50) a subscription
PLAIN = 20  # before them, acknowledged by the live subscription: its mark-delete moves on
MIN_AGE = 5  # the audit's, in seconds
DELAY = 120.0  # seconds: past the restart on an idle machine, so the tracker recovers them


def _buckets(zk: KazooClient, topic: TopicName, cursor: str) -> dict[str, int]:
    """The bucket snapshots a cursor records: key -> ledger, from its znode (Bucket.java
    putBucketKeyId: `cursor.putCursorProperty(bucketKey, bucketId)`)."""
    data, _ = zk.get(f"/managed-ledgers/{managed_ledger_name(topic)}/{cursor}")
    info = ManagedCursorInfo()
    info.ParseFromString(data)
    return {p.name: int(p.value) for p in info.cursorProperties if p.name.startswith(BUCKET)}


def _send_keyed(client: pulsar.Client, topic: TopicName, values: dict[str, str]) -> dict[str, str]:
    producer = client.create_producer(topic.full_name, batching_enabled=False)
    for key, value in values.items():
        producer.send(value.encode(), partition_key=key)
    producer.close()
    return values


def _mark_delete(zk: KazooClient, topic: TopicName, cursor: str) -> int:
    """The ledger of the mark-delete position the cursor's znode records (-1: none)."""
    data, _ = zk.get(f"/managed-ledgers/{managed_ledger_name(topic)}/{cursor}")
    info = ManagedCursorInfo()
    info.ParseFromString(data)
    return info.markDeleteLedgerId if info.HasField("markDeleteLedgerId") else -1


def _bucket_ledgers(zk: KazooClient, topic: TopicName) -> dict[int, dict[str, str]]:
    """Every bucket snapshot ledger in BookKeeper that names `topic`, with its metadata."""
    found = {}
    for ledger in rig.bookkeeper_ledgers(zk):
        try:
            metadata = rig.ledger_metadata(zk, ledger)
        except NoNodeError:  # deleted meanwhile
            continue
        named = metadata.get("pulsar/delayedIndexTopic")
        if metadata.get("component") == "delayed-index-bucket" and named == topic.full_name:
            found[ledger] = metadata
    return found


def _said(cluster: PulsarCluster, ledgers: set[int]) -> list[tuple[str, str, object]]:
    """What the sidecars said of `ledgers`: (sidecar, event, reason)."""
    return [
        (sidecar.name, e["event"], e.get("reason") or e.get("ledger_id"))
        for sidecar in cluster.sidecars
        for e in sidecar.events()
        if e.get("ledger_id") in ledgers
    ]


def _audit_enqueue(
    cluster: PulsarCluster, namespace: NamespaceName, report: Path
) -> dict[int, str]:
    """`ledger-janitor audit -c <broker.conf> --enqueue`, scoped to the namespace: the
    orphans it enqueued, each with its component (its kind)."""
    figures = cluster_rig.audit(
        cluster, "--min-age", f"{MIN_AGE}s", "--enqueue", "--output", str(report),
        "--set", f"deletionNamespaces={namespace}", "--set", "sendDelaySecondsOfTwoPhaseDeletion=1",
    )  # fmt: skip
    print("audit:", json.dumps(figures))
    # The figures (and so the metrics file) count the kinds apart.
    by_component = figures["orphans_by_component"]
    assert by_component["DELAYED_INDEX_BUCKET"] >= 3 and by_component["COMPACTED_LEDGER"] >= 1
    found = rig.rows(
        f"SELECT ledger_id, component FROM '{report}/unreferenced/**/*.parquet' "
        f"WHERE status = 'orphan' AND namespace = '{namespace}'"
    )
    return {int(ledger): str(component) for ledger, component in found}


def test_leaked_snapshots_go_live_ones_stay_every_delayed_message_comes_after_a_cold_restart(
    pulsar_cluster: PulsarCluster, cluster_admin: ClusterAdmin, cluster_namespace: NamespaceName,
    java: JavaPrograms, zk: KazooClient, sidecars: PulsarCluster, tmp_path: Path,
) -> None:  # fmt: skip
    cluster, admin, ns = pulsar_cluster, cluster_admin, cluster_namespace
    topic = TopicName(ns, "delayed")
    client = workload.client(cluster, tmp_path / "client.log")
    shared = pulsar.ConsumerType.Shared
    try:
        live = client.subscribe(topic.full_name, "live", consumer_type=shared)
        gone = client.subscribe(topic.full_name, "gone", consumer_type=shared)
        producer = client.create_producer(topic.full_name, batching_enabled=False)
        plain = [producer.send(f"plain-{i}".encode()) for i in range(PLAIN)]
        for message in rig.receive_all(live, PLAIN):
            live.acknowledge(message)
        due = time.time() + DELAY
        delayed = {f"delayed-{i}".encode() for i in range(DELAYED)}
        for payload in sorted(delayed):
            producer.send(payload, deliver_at=int(due * 1000))
        producer.close()
        # Both trackers seal their buckets as the data ledgers roll (3 each), and record them.
        wait_until(
            lambda: min(len(_buckets(zk, topic, c)) for c in ("live", "gone")) >= 2, 120,
            "both subscriptions recording sealed buckets", poll=1,
        )  # fmt: skip
        recorded = _buckets(zk, topic, "live")
        made = _bucket_ledgers(zk, topic)
        assert set(recorded.values()) <= set(made), (recorded, sorted(made))
        gone_made = {n for n, m in made.items() if m["pulsar/delayedIndexCursor"] == "gone"}
        assert gone_made, made

        # Unrecorded snapshots, as a broker that crashed before recording them leaves them:
        # one of the plain messages' first ledger, which `live` has acknowledged past; one of
        # the delayed messages' ledgers, which it has not; one of `gone`.
        first = plain[0].ledger_id()
        passed = plant_buckets(cluster, java, topic, "live", f"{BUCKET}_{first}_{first}")
        ranges = [tuple(map(int, key.rsplit("_", 2)[1:])) for key in recorded]
        start, end = min(r[0] for r in ranges), max(r[1] for r in ranges)
        unread = plant_buckets(cluster, java, topic, "live", f"{BUCKET}_{start}_{end}")
        of_gone = plant_buckets(cluster, java, topic, "gone", f"{BUCKET}_{start}_{end}")
        # LeakMaker writes what the broker writes: the same keys as a real snapshot's.
        planted_metadata = _bucket_ledgers(zk, topic)[min(passed)]
        assert set(planted_metadata) == set(made[min(made)]), (planted_metadata, made[min(made)])

        # A compacted topic whose compaction was interrupted (its ledger planted, recorded
        # nowhere), then compacted again over newer messages, as the next run does.
        prices = TopicName(ns, "prices")
        client.subscribe(prices.full_name, "keep").close()  # nothing is trimmed under the test
        values = _send_keyed(client, prices, {f"k{i}": f"v1-{i}" for i in range(5)})
        rig.compact(admin, prices)
        (made_c,) = java.run("LeakMaker", cluster.zookeeper_hosts, prices.full_name, "-", 1, 1024)
        interrupted = {int(ledger) for ledger in made_c["ledgers"]}
        planted_at = time.time()
        admin.put(f"{admin.topic_path(prices)}/unload")  # a new data ledger above it
        values |= _send_keyed(client, prices, {f"k{i}": f"v2-{i}" for i in range(3, 8)})
        compacted = rig.compact(admin, prices)

        gone.close()
        admin.delete(f"{admin.topic_path(topic)}/subscription/gone")
        left_by_broker = gone_made & rig.bookkeeper_ledgers(zk)
        print(f"snapshots of the deleted subscription the broker left: {sorted(left_by_broker)} "
              f"of {sorted(gone_made)}")  # fmt: skip
        # An open cursor's znode keeps the mark-delete it had when it last closed (here: when
        # made, before the plain messages); the live one is in its cursor ledger. The topic
        # unloaded (as every rollout does) closes the cursor, which writes it to the znode;
        # the `__compaction` cursor's too, with the compacted ledger it records.
        assert _mark_delete(zk, topic, "live") <= first, "the znode moved while open"
        admin.put(f"/admin/v2/namespaces/{ns}/unload")
        wait_until(
            lambda: _mark_delete(zk, topic, "live") > first, 60,
            "the closed cursor's znode recording its mark-delete", poll=0.5,
        )  # fmt: skip

        for sidecar in cluster.sidecars:
            workload.start_sidecar(sidecar, [ns])
        time.sleep(max(0.0, planted_at + MIN_AGE + 1 - time.time()))  # old enough for the audit
        orphans = _audit_enqueue(cluster, ns, tmp_path / "report")
        print("the audit's orphans (ledger: component):", orphans)
        kinds = {**dict.fromkeys(passed | unread | of_gone, "DELAYED_INDEX_BUCKET"),
                 **dict.fromkeys(interrupted, "COMPACTED_LEDGER")}  # fmt: skip
        assert {n: orphans.get(n) for n in kinds} == kinds, orphans
        assert compacted not in orphans
        assert not set(orphans) & set(recorded.values()), "a recorded snapshot is an orphan"
        # The live snapshots enqueued by hand too, as a mistaken operator might.
        enqueued = run_cli(
            "enqueue", topic.full_name, *map(str, sorted(recorded.values())),
            "--kind", "DELAYED_INDEX_BUCKET", "--metadata-store", cluster.metadata_url,
            "--broker-url", cluster.service_url,
            "--set", "sendDelaySecondsOfTwoPhaseDeletion=1", timeout=600,
        )  # fmt: skip
        assert enqueued.returncode == 0, enqueued.stderr[-3000:]

        doomed = passed | of_gone | left_by_broker | interrupted
        try:
            wait_until(
                lambda: not doomed & rig.bookkeeper_ledgers(zk), 240,
                "the unreadable snapshots deleted", poll=1,
            )  # fmt: skip
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {_said(cluster, doomed)}") from None
        # Each pending deletion of a kept one was judged (and reconsumed) by now.
        kept = unread | set(recorded.values())

        def judged() -> bool:
            seen = {
                e.get("ledger_id")
                for sidecar in cluster.sidecars
                for e in sidecar.events()
                if e["event"] == "reconsumed"
            }
            return kept <= seen

        wait_until(judged, 240, "every kept snapshot's pending deletion judged", poll=1)
        alive = rig.bookkeeper_ledgers(zk)
        assert kept <= alive, sorted(kept - alive)
        assert set(_buckets(zk, topic, "live").values()) <= alive
        for sidecar in cluster.sidecars:
            assert sidecar.stop() == 0, sidecar.log_tail()
        live.close()

        # Cold: both brokers stopped, then both started; the tracker recovers the buckets.
        in_parallel(cluster.brokers, lambda broker: broker.stop())
        in_parallel(cluster.brokers, lambda broker: broker.start())
        restarted = time.time()
        print(f"restarted {due - restarted:.0f} s before the delayed messages were due")
        back = client.subscribe(topic.full_name, "live", consumer_type=shared)
        wait = max(0.0, due - time.time()) + 120
        received = [m.data() for m in rig.receive_all(back, DELAYED, timeout=wait)]
        assert set(received) == delayed, sorted(delayed - set(received))
        assert time.time() >= due - 2, "delivered before it was due"
        back.close()
        view = rig.compacted_view(client, prices)
        assert {key: value.decode() for key, value in view.items()} == values
        assert compacted in rig.bookkeeper_ledgers(zk)
    finally:
        client.close()
