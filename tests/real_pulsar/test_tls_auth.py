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
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from core.errors import MetadataError
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.domain.topics import TopicName
from harness.java import JavaPrograms
from harness.oauth2_issuer import Issuer
from tests.real_pulsar.tls_rig import (
    OAUTH2_PLUGIN,
    TlsPulsar,
    both_phases,
    make_namespace,
    run_cli,
    tls_pulsar,
    tls_zk,
)
from transport.admin_http import AdminHttp
from transport.auth import ClientCertificate

__all__ = ["tls_pulsar", "tls_zk"]  # the fixtures


def test_both_phases_run_over_mutual_tls(
    tls_pulsar: TlsPulsar, java: JavaPrograms, tls_zk: KazooClient, client_log: Path
) -> None:
    auth = tls_pulsar.auth(tls_pulsar.pki.clients["admin"])
    both_phases(tls_pulsar, java, tls_zk, client_log, "mtls", auth)


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
        both_phases(tls_pulsar, java, tls_zk, client_log, "oauth", auth)
    print("granted:", issuer.granted)
    agents = {agent.split("/")[0] for agent, _ in issuer.granted}
    assert "python-httpx" in agents and len(agents) >= 2, agents  # ours, and the C++ client's
    assert {audience for _, audience in issuer.granted} == {"urn:pulsar:test"}
    assert issuer.refused == 0


@pytest.mark.parametrize("presented", ["no certificate", "another CA's certificate"])
def test_the_admin_source_refused_says_why_and_is_not_retried(
    tls_pulsar: TlsPulsar, presented: str
) -> None:
    ns = make_namespace(tls_pulsar, "refused")
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


def the_error_line(stderr: str) -> str:
    """`run`'s one error line, the last on stderr: before it come only its JSON log lines
    (the start-up line names what it uses)."""
    *logged, line = stderr.splitlines()
    assert all(json.loads(entry)["level"] for entry in logged), logged
    return line


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
    done = run_cli(tls_pulsar, tmp_path, tls_pulsar.auth(pair))
    assert done.returncode == 2
    line = the_error_line(done.stderr)
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
        done = run_cli(tls_pulsar, tmp_path, auth)
    assert done.returncode == 2
    line = the_error_line(done.stderr)
    assert line.startswith(f"error: the OAuth2 issuer refused POST {issuer.url}/token: "), line
    assert line.endswith("HTTP 401 invalid_client"), line
    assert issuer.refused >= 1 and not issuer.granted
