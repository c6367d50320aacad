"""A ZooKeeper secured with digest ACLs: the sidecar reads and deletes with its credentials from
the environment only, and nothing without them."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from config import ServiceConfiguration, parse_store_url
from core.errors import ConfigurationError, MetadataError
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.adapters.stores.zookeeper import DIGEST_ENV, ZooKeeperMetadataStore
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import ZkLedgerFactory, lay_out_cluster
from harness.process import wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.sidecar.wiring import open_sidecar
from tests.reliability.oracle import GroundTruth, ml_path, pending
from tests.reliability.raw_ledgers import ZooKeeperLedgers
from tests.reliability.support import start_worker

USER, PASSWORD = "janitor", "s3cret-digest"


def test_zookeeper_digest_acls(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The operator's part: a chroot only `janitor` may touch.
    admin = KazooClient(hosts=zookeeper.hosts, auth_data=[("digest", f"{USER}:{PASSWORD}")])
    admin.start()
    admin.create(chroot, b"", acl=[make_digest_acl(USER, PASSWORD, all=True)])
    admin.stop()
    admin.close()
    url = f"zk:{zookeeper.hosts}{chroot}"

    # With the credentials from the environment: seed Pulsar's layout, enqueue, commit.
    monkeypatch.setenv(DIGEST_ENV, f"{USER}:{PASSWORD}")
    store = ZooKeeperMetadataStore.connect(parse_store_url(url))
    lay_out_cluster(store)  # as the cluster's own processes would, with the credentials
    truth = GroundTruth(store, ZkLedgerFactory(store))
    seeded = truth.seed(TopicName(namespace, "secure"), 6)
    released = seeded.ledgers[:4]
    config = ServiceConfiguration().with_overrides(
        metadata_store_url=url,
        broker_service_url=broker.service_url,
        send_delay_seconds_of_two_phase_deletion=0,
    )
    sidecar = open_sidecar(config, client_log=tmp_path / "client.log")
    try:
        sidecar.phase_one.enqueue_then_commit(
            [pending(seeded.topic, i) for i in released],
            lambda: truth.release(seeded.topic, released),
        )
    finally:
        sidecar.close()

    # What we create is ours alone (CREATOR_ALL_ACL): nobody else can even read it.
    anonymous = KazooClient(hosts=zookeeper.hosts + chroot)
    anonymous.start()
    try:
        with pytest.raises(NoAuthError):
            anonymous.get(ml_path(seeded.topic))
    finally:
        anonymous.stop()
        anonymous.close()

    # Without credentials, or with a wrong password: "unknown", so never deleted.
    for credentials in (None, f"{USER}:wrong"):
        if credentials is None:
            monkeypatch.delenv(DIGEST_ENV)
        else:
            monkeypatch.setenv(DIGEST_ENV, credentials)
        # The layout cannot even be checked: nothing is opened, so nothing is deleted.
        with pytest.raises(MetadataError, match="NoAuth"):
            open_sidecar(config, client_log=tmp_path / "client.log")
        blind = ZooKeeperMetadataStore.connect(parse_store_url(url))
        try:
            with pytest.raises(MetadataError):
                MetadataInUseLedgers(blind).fetch(seeded.topic)
        finally:
            blind.close()

    # A malformed value is refused without echoing it.
    monkeypatch.setenv(DIGEST_ENV, "no-separator-" + PASSWORD)
    with pytest.raises(ConfigurationError) as refused:
        ZooKeeperMetadataStore.connect(parse_store_url(url))
    assert PASSWORD not in str(refused.value)

    # `ledger-janitor run` with the credentials in its environment only.
    worker = start_worker(
        "secure",
        tmp_path,
        url,
        broker.service_url,
        env={DIGEST_ENV: f"{USER}:{PASSWORD}"},
        quiet=False,
        settings={"sendDelaySecondsOfTwoPhaseDeletion": 0},
    )
    raw = ZooKeeperLedgers(store.client)  # BookKeeper's tree, read with kazoo
    try:
        wait_until(lambda: not set(released) & raw.alive(), 60, "deletions")
    finally:
        worker.stop()
    assert raw.alive() == truth.referenced()
    for output in (worker.log_text(), worker.out.read_text()):
        assert PASSWORD not in output
    assert '"event": "worked"' in worker.log_text()  # the log was on, and said what it did
    store.close()
