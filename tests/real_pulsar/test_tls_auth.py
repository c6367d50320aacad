"""Mutual TLS and OAuth2 against a real broker: a second standalone of its own
(harness/pulsar_tls.py) that speaks only TLS to anyone it lets in, authenticates clients by
their certificate (AuthenticationProviderTls: the role is the common name) or by a JWT signed
with a key pair (AuthenticationProviderToken with tokenPublicKey), and authorizes them.

The sidecar, configured as a Java client would be (`pulsar+ssl://`, `https://`,
tlsTrustCertsFilePath, and authPlugin AuthenticationTls with tlsCertFile/tlsKeyFile, or
AuthenticationOAuth2 with issuerUrl/privateKey/audience against a local issuer,
harness/oauth2_issuer.py), sends phase one, reads the real `internalStats` through the admin
REST API with its certificate or token, and deletes a leaked ledger in phase two. Without a
certificate, or with one of a CA the broker does not trust, `run` stops at once with one line
saying so, instead of retrying a time-out."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest
from kazoo.client import KazooClient

from core.errors import MetadataError
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.oauth2_issuer import Issuer
from harness.pki import KeyPair, MutualPki, make_mutual_pki
from harness.pulsar_admin import BrokerAdmin
from harness.pulsar_dist import distribution
from harness.pulsar_tls import TLS_PLUGIN, TlsPulsarStandalone
from harness.pulsar_tokens import make_signed_token
from ledger_janitor.seeding import pending
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability import oracle
from transport.admin_http import AdminHttp
from transport.auth import ClientCertificate

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


def _namespace(tls: TlsPulsar, name: str) -> NamespaceName:
    namespace = NamespaceName(name, "ns")
    tls.admin.create_namespace(namespace)
    return namespace


def _both_phases(
    tls: TlsPulsar, java: JavaPrograms, zk: KazooClient, log: Path, name: str,
    auth: dict[str, str],
) -> None:  # fmt: skip
    """Phase one sends a pending deletion for a leaked ledger and for every referenced one
    of a real topic; phase two, reading `internalStats` over https, deletes the leaked one
    and keeps the others (archived after one retry)."""
    ns = _namespace(tls, name)
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


def test_both_phases_run_over_mutual_tls(
    tls_pulsar: TlsPulsar, java: JavaPrograms, tls_zk: KazooClient, client_log: Path
) -> None:
    auth = tls_pulsar.auth(tls_pulsar.pki.clients["admin"])
    _both_phases(tls_pulsar, java, tls_zk, client_log, "mtls", auth)


def test_both_phases_run_with_oauth2_client_credentials(
    tls_pulsar: TlsPulsar, java: JavaPrograms, tls_zk: KazooClient, client_log: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The Java client's keys (issuerUrl, privateKey as a file URL, audience): the Pulsar
    client and the admin REST client each fetch their token from the issuer."""
    with Issuer("janitor", "s3cret", tls_pulsar.oauth2_token) as issuer:
        credentials = tmp_path / "credentials.json"
        credentials.write_text(issuer.credentials())
        params = {"issuerUrl": issuer.url, "privateKey": f"file://{credentials}",
                  "audience": "urn:pulsar:test"}  # fmt: skip
        auth = {**tls_pulsar.auth(None), "auth_plugin": OAUTH2_PLUGIN,
                "auth_params": json.dumps(params)}  # fmt: skip
        _both_phases(tls_pulsar, java, tls_zk, client_log, "oauth", auth)
    print("granted:", issuer.granted)
    agents = {agent.split("/")[0] for agent, _ in issuer.granted}
    assert "python-httpx" in agents and len(agents) >= 2, agents  # ours, and the C++ client's
    assert {audience for _, audience in issuer.granted} == {"urn:pulsar:test"}
    assert issuer.refused == 0


@pytest.mark.parametrize("presented", ["no certificate", "another CA's certificate"])
def test_the_admin_source_refused_says_why_and_is_not_retried(
    tls_pulsar: TlsPulsar, presented: str
) -> None:
    ns = _namespace(tls_pulsar, "refused")
    pair = tls_pulsar.pki.foreign if presented != "no certificate" else None
    http = AdminHttp(
        tls_pulsar.broker.web_url_tls,
        tls_trust_certs_file=str(tls_pulsar.pki.ca_file),
        certificate=ClientCertificate(str(pair.cert_file), str(pair.key_file)) if pair else None,
    )
    source = AdminApiInUseLedgers(http)
    expected = "refused our TLS client certificate" if pair else "authentication"
    try:
        with pytest.raises(MetadataError, match=expected) as refused:
            source.fetch(TopicName(ns, "t"))
        if pair is None:  # Jetty's bare 401, as the phase-one admin calls report it
            reason = http.reason(http.request("GET", f"/admin/v2/namespaces/{ns}/permissions"))
            assert (
                reason == "unauthenticated: the broker accepted none of our credentials "
                "(none presented)"
            ), reason
    finally:
        source.close()
    print(refused.value)
    assert type(refused.value) is MetadataError  # not TransientMetadataError: no retrying


def _run(tls: TlsPulsar, tmp_path: Path, auth: dict[str, str]) -> subprocess.CompletedProcess[str]:
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


@pytest.mark.parametrize(
    ("presented", "expected"),
    [
        ("no certificate", "refused a CONNECT without credentials: Failed to authenticate"),
        ("another CA's certificate", "refused our TLS client certificate"),
    ],
)
def test_run_without_a_certificate_the_broker_takes_stops_with_one_line(
    tls_pulsar: TlsPulsar, tmp_path: Path, presented: str, expected: str
) -> None:
    pair = tls_pulsar.pki.foreign if presented != "no certificate" else None
    done = _run(tls_pulsar, tmp_path, tls_pulsar.auth(pair))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: the broker at 127.0.0.1:"), line
    assert expected in line
    if pair is not None:
        assert str(pair.cert_file) in line


def test_run_with_a_wrong_oauth2_secret_stops_with_one_line(
    tls_pulsar: TlsPulsar, tmp_path: Path
) -> None:
    with Issuer("janitor", "s3cret", tls_pulsar.oauth2_token) as issuer:
        credentials = tmp_path / "credentials.json"
        credentials.write_text(issuer.credentials(secret="wrong"))
        params = {"issuerUrl": issuer.url, "privateKey": f"file://{credentials}"}
        auth = {**tls_pulsar.auth(None), "auth_plugin": OAUTH2_PLUGIN,
                "auth_params": json.dumps(params)}  # fmt: skip
        done = _run(tls_pulsar, tmp_path, auth)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: the OAuth2 issuer refused POST {issuer.url}/token: "), line
    assert line.endswith("HTTP 401 invalid_client"), line
    assert issuer.refused >= 1 and not issuer.granted
