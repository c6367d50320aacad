"""The broker as the oracle. Real topics of every kind the reference walk claims to cover
(non-partitioned and partitioned, a name that needs encoding, an Avro schema with two
versions, subscriptions whose cursor ledgers rolled over, a compacted topic, a topic deleted
and created again, offloaded ledgers), written across many ledger roll-overs and partly
consumed. Then a pending deletion for every ledger that exists in BookKeeper, in every
namespace, and for every offloaded copy; the worker runs past every due time with no age rule
(only the in-use and creators' rules stand between it and the cluster); then the broker
restarts cold, recovering every managed ledger, cursor and schema from BookKeeper. Every
unacknowledged message reads back with its content and schema, every subscription resumes
where it was, the compacted view and every schema version are served, the offloaded data reads
back, and no ledger the broker references was deleted. Then `audit` over the cluster reports
no referenced ledger as an orphan."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pulsar
from kazoo.client import KazooClient

from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName, java_url_decode
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo
from harness.janitor import Recorder
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability import oracle

TERMINAL = {Outcome.DELETED, Outcome.ALREADY_GONE, Outcome.ARCHIVED}
Unacked = dict[tuple[TopicName, str], list[bytes]]


def _consume(
    client: pulsar.Client, topic: TopicName, sub: str, ack: int, total: int
) -> list[bytes]:
    """Receive `total` and acknowledge the first `ack` one at a time (every mark-delete is
    persisted: the cursor ledger rolls every 5); the payloads left unacknowledged."""
    consumer = client.subscribe(topic.full_name, sub, consumer_type=pulsar.ConsumerType.Shared)
    received = rig.receive_all(consumer, total)
    for message in received[:ack]:
        consumer.acknowledge(message)
    time.sleep(1)  # let the last mark-delete reach the cursor ledger
    consumer.close()
    return [m.data() for m in received[ack:]]


def _build(client: pulsar.Client, admin: BrokerAdmin, ns: NamespaceName) -> Unacked:
    """Every kind of topic; what each subscription has yet to receive."""
    unacked: Unacked = {}
    plain = TopicName(ns, "plain")
    for sub in ("s1", "s2"):
        client.subscribe(plain.full_name, sub).close()
    sent = rig.produce(client, plain, 45)  # 5 ledgers
    unacked[(plain, "s1")] = _consume(client, plain, "s1", 23, 45)
    unacked[(plain, "s2")] = _consume(client, plain, "s2", 7, 45)
    unacked[(plain, "keep")] = sent

    parts = TopicName(ns, "parts")
    admin.create_partitioned(parts, 2)
    client.subscribe(parts.full_name, "s").close()
    producer = client.create_producer(parts.full_name, batching_enabled=False)
    for index in range(30):
        producer.send(f"p-{index}".encode(), partition_key=str(index))
    producer.close()
    unacked[(parts, "s")] = _consume(client, parts, "s", 10, 30)

    encoded = TopicName(ns, "a b%+~*\u00e9")
    unacked[(encoded, "keep")] = rig.produce(client, encoded, 15)

    orders = TopicName(ns, "orders")
    # The Python client writes no field defaults, so a new field is only FORWARD compatible:
    # readers of version 1 read version 2.
    admin.put(f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy", "FORWARD")
    client.subscribe(orders.full_name, "s", schema=pulsar.schema.AvroSchema(rig.OrderV1)).close()
    for record in (rig.OrderV1(item="a"), rig.OrderV2(item="b", qty=3)):
        producer = client.create_producer(
            orders.full_name, schema=pulsar.schema.AvroSchema(type(record)), batching_enabled=False
        )
        for _ in range(6):
            producer.send(record)
        producer.close()

    compacted = TopicName(ns, "compacted")
    client.subscribe(compacted.full_name, "keep").close()
    producer = client.create_producer(compacted.full_name, batching_enabled=False)
    for index in range(24):
        producer.send(f"v{index}".encode(), partition_key=f"k{index % 4}")
    producer.close()
    admin.put(f"{admin.topic_path(compacted)}/compaction")
    rig.wait_until(
        lambda: admin.get(f"{admin.topic_path(compacted)}/compaction")["status"] == "SUCCESS",
        60, "the compaction",
    )  # fmt: skip
    unacked[(compacted, "keep")] = [f"v{index}".encode() for index in range(24)]

    reborn = TopicName(ns, "reborn")
    rig.produce(client, reborn, 12, prefix="old")
    admin.delete(f"{admin.topic_path(reborn)}?force=true")
    unacked[(reborn, "keep")] = rig.produce(client, reborn, 7, prefix="new")

    tiered = TopicName(ns, "tiered")
    unacked[(tiered, "keep")] = rig.produce(client, tiered, 35, prefix="t")
    admin.offload(tiered)
    return unacked


def _topics(admin: BrokerAdmin, ns: NamespaceName) -> list[TopicName]:
    return [TopicName.parse(name) for name in admin.topics(ns)]


def _referenced(admin: BrokerAdmin, ns: NamespaceName) -> tuple[set[int], set[int]]:
    """(every ledger the broker says the namespace's topics reference, those of them whose
    BookKeeper copy is gone after an offload)."""
    found, offloaded = set(), set()
    for topic in _topics(admin, ns):
        found |= rig.ledgers_of(admin, topic)
        stats = admin.internal_stats(topic)
        offloaded |= {entry["ledgerId"] for entry in stats["ledgers"] if entry["offloaded"]}
    return found, offloaded


def _every_ledger_enqueued(zk: KazooClient) -> list[PendingDeleteLedgerInfo]:
    """A pending deletion for every ledger in BookKeeper, named after the topic its own
    custom metadata names (a ledger that names none: after a topic of public/default)."""
    infos = []
    for ledger_id in sorted(rig.bookkeeper_ledgers(zk)):
        meta = rig.ledger_metadata(zk, ledger_id)
        component, topic = LedgerComponent.MANAGED_LEDGER, TopicName.parse("public/default/x")
        if "pulsar/managed-ledger" in meta:
            # `tenant/ns/persistent/<local>`, or a v1 name `property/cluster/ns/...` (the
            # broker's own heartbeat namespace still has one): no v2 topic, so public/default.
            path, _, local = meta["pulsar/managed-ledger"].rsplit("/", 2)
            if path.count("/") == 1:
                topic = TopicName(NamespaceName.parse(path), java_url_decode(local))
            if "pulsar/cursor" in meta:
                component = LedgerComponent.MANAGED_CURSOR
        elif "pulsar/schemaId" in meta:
            path, _, local = meta["pulsar/schemaId"].rpartition("/")
            if path.count("/") == 1:
                topic = TopicName(NamespaceName.parse(path), java_url_decode(local))
            component = LedgerComponent.SCHEMA_STORAGE
        if topic.namespace.tenant == "pulsar":  # the broker's heartbeat namespaces: no admin
            topic = TopicName.parse("public/default/x")
        infos.append(PendingDeleteLedgerInfo(topic, component, LedgerType.LEDGER, ledger_id))
    return infos


def _offloaded_copies(zk: KazooClient, topic: TopicName) -> list[PendingDeleteLedgerInfo]:
    data, _ = zk.get(oracle.ml_path(topic))
    info = ManagedLedgerInfo()
    info.ParseFromString(data)
    return [
        PendingDeleteLedgerInfo(
            topic,
            LedgerComponent.MANAGED_LEDGER,
            LedgerType.OFFLOAD_LEDGER,
            ledger.ledgerId,
            ledger.SerializeToString(),
        )
        for ledger in info.ledgerInfo
        if ledger.HasField("offloadContext") and ledger.offloadContext.complete
    ]


def _read_back(client: pulsar.Client, unacked: Unacked) -> None:
    for (topic, sub), payloads in unacked.items():
        consumer = client.subscribe(topic.full_name, sub, consumer_type=pulsar.ConsumerType.Shared)
        received = [m.data() for m in rig.receive_all(consumer, len(payloads), timeout=60)]
        consumer.close()  # nothing acked: the subscription stays where it was
        assert Counter(received) == Counter(payloads), (topic, sub)


def test_every_ledger_enqueued_and_the_broker_recovers_everything_cold(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    pulsar_zk: KazooClient, client_log: Path, tmp_path: Path,
) -> None:  # fmt: skip
    standalone = real_pulsar.ours()
    ns = real_namespace
    client = rig.client(real_pulsar, client_log)
    try:
        unacked = _build(client, broker_admin, ns)
    finally:
        client.close()
    referenced_before, offloaded = _referenced(broker_admin, ns)
    infos = _every_ledger_enqueued(pulsar_zk)
    infos += _offloaded_copies(pulsar_zk, TopicName(ns, "tiered"))

    sidecar = rig.sidecar(
        real_pulsar, client_log,
        min_ledger_age_seconds_of_two_phase_deletion=0,
        max_reconsume_times_of_two_phase_deletion=1,
        managed_ledger_offload_driver="filesystem",
        file_system_offload_storage_base_path=str(standalone.offload_dir),
    )  # fmt: skip
    recorder = Recorder()
    try:
        sent = sidecar.phase_one.enqueue_each(infos)
        # Earlier tests' namespaces may refuse (one whose deletion topic a test squatted with
        # another schema): their ledgers are not ours to judge. Ours never refuses.
        refused = [s for s in sent if not s.enqueued]
        assert not [s for s in refused if s.info.topic_name.namespace == ns], refused
        print(f"refused by other tests' namespaces: {len(refused)}")
        wanted = Counter((s.info.ledger_id, s.info.ledger_type) for s in sent if s.enqueued)
        worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.5)
        worker.start()

        def settled(results: list[Any]) -> bool:
            done = Counter(
                (r.info.ledger_id, r.info.ledger_type)
                for r in results
                if r.info is not None and r.outcome in TERMINAL
            )
            return all(done[key] >= n for key, n in wanted.items())

        try:
            recorder.wait_for(settled, timeout=180)
        finally:
            worker.stop()
    finally:
        sidecar.close()
    deleted = {
        r.info.ledger_id for r in recorder.results if r.info and r.outcome is Outcome.DELETED
    }
    # The broker itself may drop a ledger meanwhile (a cursor switching ledgers after its last
    # acknowledgment): judged by what it references once the worker is done, and then by
    # everything reading back after the cold restart.
    referenced_after, _ = _referenced(broker_admin, ns)
    alive = rig.bookkeeper_ledgers(pulsar_zk)
    assert not deleted & referenced_after, sorted(deleted & referenced_after)
    assert referenced_after - offloaded <= alive, sorted(referenced_after - offloaded - alive)
    print(f"enqueued {sum(wanted.values())}, deleted {len(deleted)}: {sorted(deleted)}; "
          f"referenced before {len(referenced_before)}, after {len(referenced_after)}")  # fmt: skip

    standalone.restart()
    client = rig.client(real_pulsar, client_log)
    try:
        _read_back(client, unacked)
        orders = TopicName(ns, "orders")
        consumer = client.subscribe(
            orders.full_name, "s", schema=pulsar.schema.AvroSchema(rig.OrderV1),
            consumer_type=pulsar.ConsumerType.Shared,
        )  # fmt: skip
        values = [m.value().item for m in rig.receive_all(consumer, 12)]
        consumer.close()
        assert Counter(values) == Counter({"a": 6, "b": 6})  # version 2's read as version 1
        compacted = rig.compacted_view(client, TopicName(ns, "compacted"))
        assert compacted == {f"k{i}": f"v{20 + i}".encode() for i in range(4)}
    finally:
        client.close()
    for version in (0, 1):
        served = broker_admin.get(f"/admin/v2/schemas/{ns}/orders/schema/{version}")
        assert served["type"] == "AVRO"

    report = tmp_path / "report"
    offload = f"fileSystemOffloadStorageBasePath={standalone.offload_dir}"
    figures = rig.audit("--metadata-store", real_pulsar.metadata_url, "--min-age", "30s",
                        "--output", str(report), "--set", offload)  # fmt: skip
    orphans = {
        ledger
        for (ledger,) in rig.rows(
            f"SELECT ledger_id FROM '{report}/unreferenced/**/*.parquet' WHERE status = 'orphan'"
        )
    }
    referenced_now = set()
    for tenant in broker_admin.get("/admin/v2/tenants"):
        for name in broker_admin.get(f"/admin/v2/namespaces/{tenant}"):
            referenced_now |= _referenced(broker_admin, NamespaceName.parse(name))[0]
    print("audit:", figures, "orphans:", sorted(orphans))
    assert not orphans & referenced_now, sorted(orphans & referenced_now)
    assert figures["offloaded_copies"] >= 3 and figures["offload_orphans"] == 0
