"""`ledger-janitor run --metadata-store zk:...` on a ZooKeeper laid out as a Pulsar cluster
deletes exactly the enqueued, unreferenced ledgers, and nothing else."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pulsar

from deletion import message
from deletion.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.message import LedgerComponent
from deletion.metadata_codec import wrap
from deletion.ports import MetadataStore
from deletion.proto.ml_data_formats_pb2 import CompressionType, ManagedCursorInfo
from deletion.pulsar_metadata import MetadataInUseLedgers
from deletion.topics import NamespaceName, TopicName, java_url_decode, managed_ledger_path
from ledger_janitor.embedded import EmbeddedBroker
from ledger_janitor.seeding import SeededTopic, TopicSeeder, pending

from .harness.janitor import JanitorFactory, ZkLedgerFactory, zookeeper_backend
from .harness.process import start_sidecar, stop_sidecar, wait_until
from .harness.zookeeper import ZooKeeperServer

BOOKKEEPER_OWN = [
    "/ledgers/LAYOUT",
    "/ledgers/INSTANCEID",
    "/ledgers/available/bookie-1:3181",
    "/ledgers/idgen/ID-0000000042",
    "/ledgers/cookies/bookie-1:3181",
    "/ledgers/underreplication/locks",
]


def referenced_everywhere(store: MetadataStore) -> set[int]:
    """Every ledger any topic's metadata references, found by walking Pulsar's tree."""
    in_use, found = MetadataInUseLedgers(store), set()
    for tenant in store.children("/managed-ledgers"):
        for ns in store.children(f"/managed-ledgers/{tenant}"):
            for encoded in store.children(f"/managed-ledgers/{tenant}/{ns}/persistent"):
                topic = TopicName(NamespaceName(tenant, ns), java_url_decode(encoded))
                found |= in_use.fetch(topic).ledger_ids
    return found


def _compress_topic(store: MetadataStore, seeded: SeededTopic) -> None:
    for path, kind in (
        (managed_ledger_path(seeded.topic), CompressionType.ZSTD),
        (f"{managed_ledger_path(seeded.topic)}/sub", CompressionType.LZ4),
    ):
        node = store.get(path)
        assert node is not None
        store.set(path, wrap(node.data, kind))


def _archived(client: pulsar.Client, namespaces: Iterable[NamespaceName], count: int) -> list[str]:
    consumer = client.subscribe(
        [ns.archive_topic for ns in namespaces],
        "inspect",
        initial_position=pulsar.InitialPosition.Earliest,
    )
    reasons = [consumer.receive(30_000).properties()["ARCHIVE_REASON"] for _ in range(count)]
    consumer.close()
    return reasons


def test_sidecar_deletes_exactly_the_unreferenced_ledgers_of_a_pulsar_cluster(
    zookeeper: ZooKeeperServer, broker: EmbeddedBroker, chroot: str, tmp_path: Path
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    store = backend.metadata
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    try:
        for node in BOOKKEEPER_OWN:
            store.create(node, b"")
        foreign = backend.factory.create_ledger({})  # not Pulsar's: no custom metadata
        small = TopicSeeder(store, backend.factory)
        large = TopicSeeder(store, ZkLedgerFactory(store, first_id=2**33))  # 3-4-4-4-4 paths
        acme, beta = NamespaceName("acme", "orders"), NamespaceName("beta", "billing")
        partitions = [
            small.seed(
                TopicName(acme, f"orders-partition-{i}"),
                ledgers=4,
                schema_versions=2 if i == 0 else 0,
            )
            for i in range(3)
        ]
        encoded = small.seed(TopicName(acme, "events v2:raw"), ledgers=4)
        _compress_topic(store, encoded)
        invoices = large.seed(TopicName(beta, "invoices"), ledgers=4)
        compactor = backend.factory.create_ledger(
            {"application": b"pulsar", "component": b"compactor"}
        )
        compaction = ManagedCursorInfo(cursorsLedgerId=-1)
        compaction.properties.add(name="CompactedTopicLedger", value=compactor)
        store.create(
            f"{managed_ledger_path(partitions[0].topic)}/__compaction",
            compaction.SerializeToString(),
        )
        leaked = encoded.ledgers[0]
        small.release(encoded, [leaked])  # a legacy leak: never enqueued, so never touched

        sidecar = janitor.sidecar()
        expected_deleted: set[int] = set()
        for seeded in [*partitions, encoded, invoices]:
            released = seeded.ledgers[:2]
            sidecar.phase_one.enqueue_then_commit(
                [pending(seeded.topic, i) for i in released],
                lambda s=seeded, r=released: (large if s is invoices else small).release(s, r),
            )
            expected_deleted |= set(released)
        old_cursor = small.rotate_cursor(partitions[1])
        sidecar.phase_one.enqueue(
            [pending(partitions[1].topic, old_cursor, LedgerComponent.MANAGED_CURSOR)]
        )
        expected_deleted.add(old_cursor)
        crashed = invoices.ledgers[-1]  # enqueued, but the commit never happened
        sidecar.phase_one.enqueue([pending(invoices.topic, crashed)])
        hostile = [
            pending(partitions[0].topic, foreign),
            pending(partitions[0].topic, compactor),
            pending(TopicName(beta, "invoices"), invoices.ledgers[0]),
        ]  # beta's, on acme
        for info in hostile:
            sidecar.pool.send(acme.deletion_topic, message.encode(info), {}).result(10)

        ledgers = BookKeeperLedgerStorage(store)
        before, referenced_before = set(ledgers.ledger_ids()), referenced_everywhere(store)
        assert referenced_before <= before and expected_deleted <= before - referenced_before

        run = start_sidecar(
            backend.metadata_url,
            broker.service_url,
            sendDelaySecondsOfTwoPhaseDeletion=0,
            reconsumeLaterSecondsOfTwoPhaseDeletion=0,
            maxReconsumeTimesOfTwoPhaseDeletion=2,
        )
        try:
            wait_until(lambda: not expected_deleted & set(ledgers.ledger_ids()), 60, "deletions")
            reasons = _archived(sidecar.client, [acme, beta], count=4)
        finally:
            stop_sidecar(run)

        after = set(ledgers.ledger_ids())
        assert before - after == expected_deleted
        assert referenced_everywhere(store) == referenced_before
        assert referenced_before <= after
        assert {leaked, foreign, compactor, crashed} <= after
        assert all(store.get(node) is not None for node in BOOKKEEPER_OWN)
        assert sum("outside namespace" in r for r in reasons) == 1  # beta's ledger on acme
        assert sum("application=None" in r for r in reasons) == 1  # the foreign ledger
        assert sum(r.startswith("gave up after 2 reconsumes") for r in reasons) == 2
    finally:
        janitor.close()
        backend.ledgers.close()
