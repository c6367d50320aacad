"""The TLS standalone of tests/real_pulsar/test_tls_auth.py, as its tests use it: the
broker with its PKI and OAuth2 key pair, a client's settings for a certificate (or none), a
both-phases run on a real topic with a leaked ledger, and `ledger-janitor run` as an operator
starts it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest
from kazoo.client import KazooClient

from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.pki import KeyPair, MutualPki, make_mutual_pki
from harness.pulsar_admin import BrokerAdmin
from harness.pulsar_dist import distribution
from harness.pulsar_tls import TLS_PLUGIN, TlsPulsarStandalone
from harness.pulsar_tokens import make_signed_token
from ledger_janitor.demo.seeding import pending
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability import oracle

ROLES = ("admin", "stranger")
OAUTH2_PLUGIN = "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2"
OAUTH2_ROLE = "janitor-app"  # the issuer's JWT's subject


@dataclass
class TlsPulsar:
    broker: TlsPulsarStandalone
    pki: MutualPki
    admin: BrokerAdmin
    oauth2_token: str

    @property
    def cluster(self) -> RealPulsar:
        """The TLS URLs only: nothing here goes over the plain ports."""
        broker = self.broker
        return RealPulsar(
            broker.service_url_tls, broker.web_url_tls, broker.zookeeper_hosts, broker
        )

    def auth(self, pair: KeyPair | None) -> dict[str, str]:
        """The settings of a client presenting `pair` (none: no authentication at all)."""
        found = {"tls_trust_certs_file_path": str(self.pki.ca_file)}
        if pair is not None:
            found["auth_plugin"] = TLS_PLUGIN
            found["auth_params"] = f"tlsCertFile:{pair.cert_file},tlsKeyFile:{pair.key_file}"
        return found

    def client(self, log: Path) -> pulsar.Client:
        """The tests' own client (not the product's), as the superuser."""
        pair = self.pki.clients["admin"]
        return pulsar.Client(
            self.broker.service_url_tls,
            authentication=pulsar.AuthenticationTLS(str(pair.cert_file), str(pair.key_file)),
            tls_trust_certs_file_path=str(self.pki.ca_file),
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log)),
            operation_timeout_seconds=15,
        )


@pytest.fixture(scope="module")
def tls_pulsar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsPulsar]:
    root = tmp_path_factory.mktemp("mtls")
    pki = make_mutual_pki(root / "pki", ROLES)
    public_key, token = make_signed_token(distribution(), root / "issuer", OAUTH2_ROLE)
    broker = TlsPulsarStandalone(
        root / "pulsar", pki, token_public_key=public_key,
        settings={"superUserRoles": f"admin,{OAUTH2_ROLE}"},
    )  # fmt: skip
    broker.start()
    admin = BrokerAdmin(broker.web_url_tls, verify=broker.tls_context("admin"))
    try:
        yield TlsPulsar(broker, pki, admin, token)
    finally:
        admin.close()
        broker.stop()


@pytest.fixture
def tls_zk(tls_pulsar: TlsPulsar) -> Iterator[KazooClient]:
    client = KazooClient(hosts=tls_pulsar.broker.zookeeper_hosts, timeout=30)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


def make_namespace(tls: TlsPulsar, name: str) -> NamespaceName:
    made = NamespaceName(name, "ns")
    tls.admin.create_namespace(made)
    return made


def both_phases(
    tls: TlsPulsar, java: JavaPrograms, zk: KazooClient, log: Path, name: str,
    auth: dict[str, str],
) -> None:  # fmt: skip
    """Phase one sends a pending deletion for a leaked ledger and for every referenced one
    of a real topic; phase two, reading `internalStats` over https, deletes the leaked one
    and keeps the others (archived after one retry)."""
    ns = make_namespace(tls, name)
    topic = TopicName(ns, "orders")
    client = tls.client(log)
    try:
        rig.produce(client, topic, 15)
        (made,) = java.run("LeakMaker", tls.broker.zookeeper_hosts, oracle.ml_name(topic), "-",
                           1, 1000)  # fmt: skip
        (leaked,) = made["ledgers"]
        rig.produce(client, topic, 12, prefix="more")  # the topic's ledgers move past it
    finally:
        client.close()
    referenced = rig.ledgers_of(tls.admin, topic)
    assert leaked in rig.bookkeeper_ledgers(zk) and leaked not in referenced

    sidecar = rig.sidecar(
        tls.cluster, log, **auth, in_use_ledgers_source="ADMIN", deletion_namespaces=(str(ns),),
        min_ledger_age_seconds_of_two_phase_deletion=0,
        max_reconsume_times_of_two_phase_deletion=1,
    )  # fmt: skip
    try:
        sidecar.phase_one.enqueue([pending(topic, ledger) for ledger in [leaked, *referenced]])
        recorder = rig.run_worker(
            sidecar,
            lambda r: (
                Outcome.DELETED in r.of(leaked)
                and all(Outcome.ARCHIVED in r.of(i) for i in referenced)
            ),
            timeout=120,
        )
    finally:
        sidecar.close()
    for result in recorder.results:
        if result.info is not None and result.info.ledger_id in referenced:
            assert "still referenced by" in result.reason, result.reason
    assert leaked not in rig.bookkeeper_ledgers(zk)
    assert referenced <= rig.ledgers_of(tls.admin, topic)


def run_cli(
    tls: TlsPulsar, tmp_path: Path, auth: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`ledger-janitor run` as an operator starts it, with a properties file; stopped after
    60 s if it keeps going."""
    keys = {"tls_trust_certs_file_path": "tlsTrustCertsFilePath", "auth_plugin": "authPlugin",
            "auth_params": "authParams"}  # fmt: skip
    cluster = tls.cluster
    settings = {
        "brokerServiceUrl": cluster.service_url,
        "webServiceUrl": cluster.web_url,
        "metadataStoreUrl": cluster.metadata_url,
        "deletionNamespaces": "refused/ns",
        "operationTimeoutSeconds": "10",
        "metricsPort": "0",
        **{keys[key]: value for key, value in auth.items()},
    }
    conf = tmp_path / "janitor.conf"
    conf.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    done = subprocess.run(
        [sys.executable, "-m", "ledger_janitor", "run", "-c", str(conf)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    print(done.stderr)
    return done
