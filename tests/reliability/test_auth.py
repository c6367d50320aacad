"""Credentials as a secured cluster needs them: the broker token from files and the environment,
TLS settings reaching the Pulsar client."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import ServiceConfiguration, load_configuration
from harness.pki import Pki
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.auth_rig import (
    TOKEN_PLUGIN,
    Connect,
    attempt,
    config_for,
    fake_broker,
    pki,
)
from transport import client as pulsar_broker

__all__ = ["pki"]  # the fixtures


def test_pulsar_lite_accepts_any_token(
    broker: EmbeddedBroker,
    tmp_path: Path,
) -> None:
    """Why the token tests below use a fake endpoint: pulsar-lite enforces nothing."""
    config = ServiceConfiguration().with_overrides(
        broker_service_url=broker.service_url,
        auth_plugin=TOKEN_PLUGIN,
        auth_params="token:not-a-valid-jwt",
    )
    client = pulsar_broker.connect(config, tmp_path / "client.log")
    try:
        client.create_producer("persistent://auth-check/ns/t").send(b"accepted")
    finally:
        client.close()


@pytest.mark.parametrize("form", ["file:", "file://", "env:", "token:", "environment only"])
def test_the_token_reaches_the_broker_from_files_and_the_environment(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"jwt-{form.strip(':/').replace(' ', '-')}"
    token_file = tmp_path / "token"
    token_file.write_text(secret + "\n")  # as editors and `kubectl create secret` write it
    monkeypatch.setenv("JANITOR_TEST_TOKEN", secret)
    params = {
        "file:": f"file:{token_file}",
        "file://": f"file://{token_file}",
        "env:": "env:JANITOR_TEST_TOKEN",
        "token:": f"token:{secret}",
        "environment only": f"file:{token_file}",
    }[form]
    with fake_broker() as fake:
        if form == "environment only":  # nothing on a command line: LEDGER_JANITOR_* only
            environ = {
                "LEDGER_JANITOR_AUTH_PLUGIN": TOKEN_PLUGIN,
                "LEDGER_JANITOR_AUTH_PARAMS": params,
                "LEDGER_JANITOR_BROKER_SERVICE_URL": fake.url,
                "LEDGER_JANITOR_OPERATION_TIMEOUT_SECONDS": "2",
            }
            config = load_configuration(None, environ, {}).config
        else:
            config = config_for(fake.url, auth_plugin=TOKEN_PLUGIN, auth_params=params)
        attempt(config, fake, tmp_path / "client.log")
    assert fake.seen, fake.handshake_failures
    assert set(fake.seen) == {Connect("token", secret.encode())}  # on every (re)connect


@pytest.mark.parametrize("trust", ["ca file", "insecure", "none"])
def test_tls_settings_reach_the_pulsar_client(trust: str, pki: Pki, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("jwt-over-tls\n")
    with fake_broker(pki.server) as fake:
        settings: dict[str, object] = {
            "auth_plugin": TOKEN_PLUGIN,
            "auth_params": f"file:{token_file}",
        }
        if trust == "ca file":
            settings["tls_trust_certs_file_path"] = str(pki.ca_file)
        elif trust == "insecure":
            settings["tls_allow_insecure_connection"] = True
        attempt(config_for(fake.url, **settings), fake, tmp_path / "client.log")
    if trust == "none":  # our CA is in no system store: the handshake must fail
        assert fake.seen == [] and fake.handshake_failures
    else:
        assert fake.seen and set(fake.seen) == {Connect("token", b"jwt-over-tls")}
