"""authPlugin/authParams beyond tokens, read as the Java client reads them: a client
certificate (AuthenticationTls) and OAuth2 client credentials (AuthenticationOAuth2), the
latter's token fetched from a real local issuer (harness/oauth2_issuer.py) and kept until
shortly before it expires. The real-broker side is tests/real_pulsar/test_tls_auth.py."""

from __future__ import annotations

import json
from pathlib import Path

import pulsar
import pytest

from core.errors import ConfigurationError, MetadataError, TransientMetadataError
from harness.oauth2_issuer import Issuer
from harness.pki import make_mutual_pki
from ledger_janitor.demo.embedded import free_port
from transport.auth import (
    OAuth2Settings,
    certificate_from,
    oauth2_from,
    parameters,
    pulsar_authentication,
)
from transport.oauth2 import ClientCredentials

TLS = "org.apache.pulsar.client.impl.auth.AuthenticationTls"
OAUTH2 = "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2"


def test_both_forms_of_auth_params() -> None:
    assert parameters("tlsCertFile:/a/c.pem,tlsKeyFile:/a/k.pem") == {
        "tlsCertFile": "/a/c.pem",
        "tlsKeyFile": "/a/k.pem",
    }
    assert parameters('{"issuerUrl": "https://i:8443", "audience": "a"}') == {
        "issuerUrl": "https://i:8443",
        "audience": "a",
    }


def test_the_client_certificate_in_either_form(tmp_path: Path) -> None:
    pki = make_mutual_pki(tmp_path, ("janitor",))
    pair = pki.clients["janitor"]
    short = f"tlsCertFile:{pair.cert_file},tlsKeyFile:{pair.key_file}"
    as_json = json.dumps({"tlsCertFile": str(pair.cert_file), "tlsKeyFile": str(pair.key_file)})
    for plugin, params in ((TLS, short), ("tls", as_json)):
        found = certificate_from(plugin, params)
        assert found is not None and found.cert_file == str(pair.cert_file)
        assert isinstance(pulsar_authentication(plugin, params), pulsar.AuthenticationTLS)
    with pytest.raises(ConfigurationError, match="needs authParams tlsCertFile"):
        certificate_from(TLS, f"tlsCertFile:{pair.cert_file}")
    with pytest.raises(ConfigurationError, match="cannot read the TLS client key file /nope"):
        certificate_from(TLS, f"tlsCertFile:{pair.cert_file},tlsKeyFile:/nope")


def test_oauth2_settings_with_the_java_or_the_cpp_keys() -> None:
    java = oauth2_from(OAUTH2, '{"issuerUrl": "http://i", "privateKey": "file:///c.json"}')
    cpp = oauth2_from("oauth2", '{"issuer_url": "http://i", "private_key": "file:///c.json"}')
    assert java == cpp == OAuth2Settings("http://i", "file:///c.json")
    # The C++ client reads only its own keys.
    assert json.loads(java.client_json()) == {
        "issuer_url": "http://i",
        "private_key": "file:///c.json",
    }
    with pytest.raises(ConfigurationError, match="needs authParams"):
        oauth2_from(OAUTH2, '{"issuerUrl": "http://i"}')


def test_the_token_is_fetched_once_and_again_before_it_expires(tmp_path: Path) -> None:
    now = [1000.0]
    with Issuer("janitor", "s3cret", "jwt-1", expires_in=300) as issuer:
        credentials = tmp_path / "credentials.json"
        credentials.write_text(issuer.credentials())
        settings = OAuth2Settings(issuer.url, str(credentials), audience="urn:pulsar")
        source = ClientCredentials(settings, 5, clock=lambda: now[0])
        try:
            assert [source.token(), source.token()] == ["jwt-1", "jwt-1"]
            assert len(issuer.granted) == 1
            now[0] += 269  # 31 s left: still good
            issuer.token = "jwt-2"
            assert source.token() == "jwt-1"
            now[0] += 1  # 30 s left: renewed
            assert source.token() == "jwt-2"
        finally:
            source.close()
    assert [audience for _, audience in issuer.granted] == ["urn:pulsar", "urn:pulsar"]


def test_a_wrong_secret_is_refused_for_good_and_an_absent_issuer_is_transient(
    tmp_path: Path,
) -> None:
    with Issuer("janitor", "s3cret", "jwt") as issuer:
        credentials = tmp_path / "credentials.json"
        credentials.write_text(issuer.credentials(secret="wrong"))
        source = ClientCredentials(OAuth2Settings(issuer.url, f"file://{credentials}"), 5)
        try:
            with pytest.raises(MetadataError, match="HTTP 401 invalid_client") as refused:
                source.token()
        finally:
            source.close()
    assert type(refused.value) is MetadataError and issuer.refused == 1
    gone = ClientCredentials(OAuth2Settings(f"http://127.0.0.1:{free_port()}", str(credentials)), 5)
    try:
        with pytest.raises(TransientMetadataError, match="OAuth2 issuer"):
            gone.token()
    finally:
        gone.close()
    with pytest.raises(ConfigurationError, match="cannot read the OAuth2 credentials"):
        ClientCredentials(OAuth2Settings("http://i", str(tmp_path / "missing.json")), 5)
