"""`ledger-janitor run --metadata-store zk:...` on a ZooKeeper laid out as a Pulsar cluster
deletes exactly the enqueued, unreferenced ledgers, and nothing else.

What is referenced is the test's own record (tests/reliability/oracle.py), and what exists is
read from BookKeeper's `/ledgers` tree with kazoo: never through the product's readers.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path

import pulsar
from kazoo.client import KazooClient

from deletion.domain import message
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType, ManagedCursorInfo
from harness.janitor import JanitorFactory, ZkLedgerFactory, zookeeper_backend
from harness.process import start_sidecar, stop_sidecar, wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.oracle import GroundTruth, ml_path, pending, schema_path
from tests.reliability.raw_ledgers import ZooKeeperLedgers

# Besides LAYOUT, which the backend lays out (no store is read without it).
BOOKKEEPER_OWN = [
    "/ledgers/INSTANCEID",
    "/ledgers/available/bookie-1:3181",
    "/ledgers/idgen/ID-0000000042",
    "/ledgers/cookies/bookie-1:3181",
    "/ledgers/underreplication/locks",
]


def untouched(client: KazooClient, truths: Iterable[GroundTruth]) -> bool:
    """Every managed-ledger znode is still at the version the test last wrote."""
    return all(
        client.exists(ml_path(topic)).version == truth.version
        for owner in truths
        for topic, truth in owner.topics.items()
    )


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
        small = GroundTruth(store, backend.factory)
        large = GroundTruth(store, ZkLedgerFactory(store, first_id=2**33))  # 3-4-4-4-4 paths
        acme, beta = NamespaceName("acme", "orders"), NamespaceName("beta", "billing")
        partitions = [
            small.seed(
                TopicName(acme, f"orders-partition-{i}"),
                4,
                ("sub", "reader"),
                schema_versions=2 if i == 0 else 0,
            )
            for i in range(3)
        ]
        # Not a partition: its schema is its own, not orders'.
        padded = small.seed(TopicName(acme, "orders-partition-01"), 4, schema_versions=1)
        assert schema_path(padded.topic) == "/schemas/acme/orders/orders-partition-01"
        encoded = small.seed(TopicName(acme, "events v2:raw %+~*\u00e9"), 4, ("sub", "b c"))
        assert ml_path(encoded.topic).endswith("/events+v2%3Araw+%25%2B%7E*%C3%A9")
        small.compress(encoded.topic, CompressionType.ZSTD)
        small.compress(padded.topic, CompressionType.LZ4)
        invoices = large.seed(TopicName(beta, "invoices"), 4, ("sub", "reader", "x"), 1)
        compactor = backend.factory.create_ledger(
            {"application": b"pulsar", "component": b"compactor"}
        )
        compaction = ManagedCursorInfo(cursorsLedgerId=-1)
        compaction.properties.add(name="CompactedTopicLedger", value=compactor)
        store.create(f"{ml_path(partitions[0].topic)}/__compaction", compaction.SerializeToString())
        leaked = encoded.ledgers[0]
        small.release(encoded.topic, [leaked])  # a legacy leak: never enqueued, so never touched

        sidecar = janitor.sidecar()
        expected_deleted: set[int] = set()
        for seeded, owner in [
            *((t, small) for t in [*partitions, padded, encoded]),
            (invoices, large),
        ]:
            released = seeded.ledgers[:2]
            sidecar.phase_one.enqueue_then_commit(
                [pending(seeded.topic, i) for i in released],
                partial(owner.release, seeded.topic, released),
            )
            expected_deleted |= set(released)
        old_cursor = small.rotate_cursor(partitions[1].topic, "sub")
        sidecar.phase_one.enqueue(
            [pending(partitions[1].topic, old_cursor, LedgerComponent.MANAGED_CURSOR)]
        )
        expected_deleted.add(old_cursor)
        crashed = [  # enqueued, but the commit never happened: still referenced
            pending(invoices.topic, invoices.ledgers[-1]),
            pending(padded.topic, padded.schemas[0], LedgerComponent.SCHEMA_STORAGE),
            pending(encoded.topic, encoded.cursors["b c"], LedgerComponent.MANAGED_CURSOR),
        ]
        sidecar.phase_one.enqueue(crashed)
        hostile = [
            pending(partitions[0].topic, foreign),
            pending(partitions[0].topic, compactor),
            pending(TopicName(beta, "invoices"), invoices.ledgers[0]),
        ]  # beta's, on acme
        for info in hostile:
            sidecar.pool.send(acme.deletion_topic, message.encode(info), {}).result(10)

        raw = ZooKeeperLedgers(store.client)  # type: ignore[attr-defined]
        referenced = small.referenced() | large.referenced()
        before = raw.alive()
        assert referenced <= before and expected_deleted <= before - referenced

        run = start_sidecar(
            backend.metadata_url,
            broker.service_url,
            sendDelaySecondsOfTwoPhaseDeletion=0,
            reconsumeLaterSecondsOfTwoPhaseDeletion=0,
            maxReconsumeTimesOfTwoPhaseDeletion=2,
        )
        try:
            wait_until(lambda: not expected_deleted & raw.alive(), 60, "deletions")
            reasons = _archived(sidecar.client, [acme, beta], count=len(crashed) + 3)
        finally:
            stop_sidecar(run)

        after = raw.alive()
        assert before - after == expected_deleted
        assert referenced <= after
        assert {leaked, foreign, compactor} | {info.ledger_id for info in crashed} <= after
        assert untouched(store.client, [small, large])  # type: ignore[attr-defined]
        assert all(store.get(node) is not None for node in BOOKKEEPER_OWN)
        assert sum("outside namespace" in r for r in reasons) == 1  # beta's ledger on acme
        assert sum("application=None" in r for r in reasons) == 1  # the foreign ledger
        assert sum(r.startswith("gave up after 2 reconsumes") for r in reasons) == len(crashed) + 1
    finally:
        janitor.close()
        backend.ledgers.close()
