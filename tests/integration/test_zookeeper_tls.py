"""ZooKeeper over TLS (metadataStoreConfigPath), against a real ZooKeeper that has no plain
port and requires a client certificate (harness.zookeeper_tls_fixtures)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from config.zookeeper_tls import ZooKeeperTls
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory, ZkLedgerFactory, chrooted
from harness.process import run_cli, start_sidecar, stop_sidecar, wait_until
from harness.zookeeper import ZooKeeperServer, pem_store
from harness.zookeeper_tls_fixtures import Secured, client_file
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.oracle import GroundTruth, pending
from tests.reliability.raw_ledgers import ZooKeeperLedgers


def test_the_sidecar_deletes_an_unreferenced_ledger_over_tls(
    secured: Secured, broker: EmbeddedBroker, chroot: str, tmp_path: Path
) -> None:
    server, tls, _ = secured
    url = f"zk:{server.hosts}{chroot}"
    store = chrooted(server.hosts, chroot, ZooKeeperTls(str(tls.client_store), str(tls.ca_file)))
    backend = Backend(
        "zookeeper", url, store, BookKeeperLedgerStorage(store), ZkLedgerFactory(store)
    )
    properties = client_file(tmp_path, tls.client_store, tls.ca_file)
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    try:
        truth = GroundTruth(store, backend.factory)
        seeded = truth.seed(TopicName(NamespaceName("acme", "tls"), "orders"), 3)
        released = seeded.ledgers[:1]
        # Phase one in this process, its stores opened through metadataStoreConfigPath.
        sidecar = janitor.sidecar(metadata_store_config_path=str(properties))
        sidecar.phase_one.enqueue_then_commit(
            [pending(seeded.topic, i) for i in released],
            partial(truth.release, seeded.topic, released),
        )
        raw = ZooKeeperLedgers(store.client)
        assert set(released) <= raw.alive()
        run = start_sidecar(
            url,
            broker.service_url,
            metadataStoreConfigPath=properties,
            sendDelaySecondsOfTwoPhaseDeletion=0,
        )
        try:
            wait_until(lambda: not set(released) & raw.alive(), 60, "the deletion over TLS")
        finally:
            stderr = stop_sidecar(run)
        assert set(seeded.ledgers[1:]) <= raw.alive(), stderr
    finally:
        janitor.close()
        store.close()


def _inspect(server: ZooKeeperServer, properties: Path) -> tuple[int, list[str], str]:
    done = run_cli(
        "cursor",
        "inspect",
        "persistent://acme/tls/orders",
        "sub",
        "--metadata-store",
        f"zk:{server.hosts}",
        "--set",
        f"metadataStoreConfigPath={properties}",
        "--set",
        "operationTimeoutSeconds=3",
        timeout=60,
    )
    return done.returncode, done.stderr.splitlines(), done.stdout


@pytest.mark.parametrize(
    "who", ["no certificate", "another CA's certificate", "another CA trusted"]
)
def test_a_refused_handshake_is_one_error_line_naming_tls(
    secured: Secured, tmp_path: Path, who: str
) -> None:
    server, tls, pki = secured
    keystore, truststore = {
        "no certificate": (None, tls.ca_file),
        "another CA's certificate": (pem_store(pki.foreign), tls.ca_file),
        "another CA trusted": (tls.client_store, pki.foreign.cert_file),
    }[who]
    rc, lines, stdout = _inspect(server, client_file(tmp_path, keystore, truststore))
    assert rc == 2 and len(lines) == 1 and stdout == "", lines
    assert lines[0].startswith("error: ") and "TLS handshake failed: [SSL" in lines[0], lines


@pytest.mark.parametrize("store", ["keyStore", "trustStore"])
def test_a_jks_store_is_refused_when_loaded_with_the_command_converting_it(
    secured: Secured, tmp_path: Path, store: str
) -> None:
    server, tls, _ = secured
    jks = tmp_path / "client.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed")  # JKS magic: never opened, refused by its type
    keystore, truststore = (jks, tls.ca_file) if store == "keyStore" else (tls.client_store, jks)
    properties = client_file(tmp_path, keystore, truststore)
    properties.write_text(properties.read_text().replace(f"{store}.type=PEM", f"{store}.type=JKS"))
    rc, lines, stdout = _inspect(server, properties)
    assert rc == 2 and len(lines) == 1 and stdout == "", lines
    assert lines[0].startswith("error: metadataStoreConfigPath=") and "only PEM" in lines[0]
    assert "keytool" in lines[0], lines
