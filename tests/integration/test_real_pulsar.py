"""Against a real Apache Pulsar (docker-compose.standalone.yml), when one is configured:

    PULSAR_SERVICE_URL=pulsar://localhost:6650 PULSAR_ADMIN_URL=http://localhost:8080 \
    PULSAR_METADATA_STORE=zk:localhost:2181 bash scripts/test.sh -m pulsar

Without the first two variables these tests are reported as skipped, never as passed.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from config import ServiceConfiguration, parse_store_url
from consumers.archive import DrainFilter
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Recorder
from ledger_janitor.seeding import pending
from ledger_janitor.wiring import Sidecar, open_sidecar
from transport.admin_http import AdminHttp

SERVICE = os.environ.get("PULSAR_SERVICE_URL", "")
ADMIN = os.environ.get("PULSAR_ADMIN_URL", "")
METADATA = os.environ.get("PULSAR_METADATA_STORE", "")
pytestmark = [
    pytest.mark.pulsar,
    pytest.mark.skipif(
        not (SERVICE and ADMIN),
        reason="no real Pulsar: set PULSAR_SERVICE_URL and PULSAR_ADMIN_URL (README, Tests)",
    ),
]
NAMESPACE = NamespaceName("public", "default")


@pytest.fixture(scope="module")
def topic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopicName]:
    """A real topic with real ledgers: messages written, a durable subscription created."""
    name = TopicName(NAMESPACE, f"janitor-it-{uuid.uuid4().hex[:8]}")
    log = str(tmp_path_factory.mktemp("it") / "client.log")
    client = pulsar.Client(SERVICE, logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, log))
    consumer = client.subscribe(name.full_name, "it-sub")
    producer = client.create_producer(name.full_name)
    for index in range(20):
        producer.send(f"message {index}".encode())
    consumer.acknowledge(consumer.receive(10_000))
    yield name
    client.close()


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[Sidecar]:
    config = ServiceConfiguration().with_overrides(
        broker_service_url=SERVICE,
        web_service_url=ADMIN,
        in_use_ledgers_source="ADMIN",
        metadata_store_url=METADATA or f"sqlite:{tmp_path / 'janitor.db'}",
        send_delay_seconds_of_two_phase_deletion=3,
        reconsume_later_seconds_of_two_phase_deletion=1,
        max_reconsume_times_of_two_phase_deletion=2,
    )
    opened = open_sidecar(config, client_log=tmp_path / "client.log")
    yield opened
    opened.close()


def test_admin_api_and_zookeeper_agree_on_a_real_topic(topic: TopicName) -> None:
    admin = AdminApiInUseLedgers(AdminHttp(ADMIN))
    from_admin = admin.fetch(topic)
    admin.close()
    assert from_admin.exists and from_admin.ledger_ids
    if not METADATA:
        pytest.skip("set PULSAR_METADATA_STORE to compare with the metadata in ZooKeeper")
    store = ZooKeeperMetadataStore.connect(parse_store_url(METADATA))
    try:
        from_zookeeper = MetadataInUseLedgers(store).fetch(topic)
        assert from_admin.ledger_ids >= from_zookeeper.ledger_ids - {-1}
        record = BookKeeperLedgerStorage(store).ledger(min(from_admin.ledger_ids))
        assert record is not None  # Pulsar's own ledger metadata, decoded from real bytes
        assert record.metadata_text("application") == "pulsar"
        assert record.metadata_text("pulsar/managed-ledger") == topic.managed_ledger_name
    finally:
        store.close()


def test_a_referenced_real_ledger_is_never_deleted_and_lands_in_the_archive(
    topic: TopicName, sidecar: Sidecar
) -> None:
    current = max(AdminApiInUseLedgers(AdminHttp(ADMIN)).fetch(topic).ledger_ids)
    before = time.time()
    sidecar.phase_one.enqueue([pending(topic, current)])
    recorder = Recorder()
    worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.5)
    worker.start()
    try:
        recorder.wait_for(lambda rs: Outcome.ARCHIVED in recorder.of(current), timeout=90)
    finally:
        worker.stop()
    # The real broker honours the delay; either way nothing was handled before it was due.
    assert min(recorder.times) >= before + 3.0
    assert Outcome.DELETED not in recorder.of(current)
    assert current in AdminApiInUseLedgers(AdminHttp(ADMIN)).fetch(topic).ledger_ids

    drained = sidecar.archive_drain().drain(NAMESPACE, DrainFilter(), dry_run=True)
    mine = [(a, o, r) for a, o, r in drained if a.info and a.info.ledger_id == current]
    assert mine and mine[0][1] is Outcome.WOULD_REARCHIVE and "still referenced" in mine[0][2]
