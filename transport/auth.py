"""Credentials from Pulsar-style authentication settings (authPlugin, authParams), never from
the command line: a token, a client certificate (mutual TLS) or OAuth2 client credentials,
for the Pulsar client and the admin REST client alike."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pulsar

from core.errors import ConfigurationError

_JAVA = "org.apache.pulsar.client.impl.auth."
TOKEN_PLUGINS = frozenset({f"{_JAVA}AuthenticationToken", "AuthenticationToken", "token"})
TLS_PLUGINS = frozenset({f"{_JAVA}AuthenticationTls", "AuthenticationTls", "tls"})
OAUTH2_PLUGINS = frozenset(
    {f"{_JAVA}oauth2.AuthenticationOAuth2", "AuthenticationOAuth2", "oauth2"}
)


def token_from(auth_plugin: str, auth_params: str) -> str | None:
    """The bearer token of an AuthenticationToken configuration, in any of its forms:
    `token:<jwt>`, `file:<path>` (or a file:// URL), `env:<VAR>`, `data:;base64,<...>`, raw."""
    if auth_plugin not in TOKEN_PLUGINS or not auth_params:
        return None
    scheme, _, rest = auth_params.partition(":")
    if scheme == "token":
        return rest.strip()
    if scheme == "file":
        path = unquote(urlparse(auth_params).path) if rest.startswith("//") else rest
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ConfigurationError(f"cannot read the token file {path}: {exc.strerror}") from None
    if scheme == "env":
        if rest not in os.environ:
            raise ConfigurationError(f"the token variable {rest} is not set")
        return os.environ[rest].strip()
    if scheme == "data":
        return base64.b64decode(rest.split(",", 1)[-1]).decode().strip()
    return auth_params.strip()


def parameters(auth_params: str) -> dict[str, str]:
    """authParams in either form the Java client reads: a JSON object, or
    `key1:value1,key2:value2` (AuthenticationUtil.configureFromPulsar1AuthParamString)."""
    text = auth_params.strip()
    if text.startswith("{"):
        try:
            found = json.loads(text)
        except ValueError:
            raise ConfigurationError("authParams is not valid JSON") from None
        return {str(key): str(value) for key, value in found.items()}
    pairs = (item.split(":", 1) for item in text.split(",") if item.strip())
    return {pair[0].strip(): pair[1].strip() for pair in pairs if len(pair) == 2}


@dataclass(frozen=True)
class ClientCertificate:
    """The certificate (PEM) and private key (PEM, PKCS#8) a client presents."""

    cert_file: str
    key_file: str


def certificate_from(auth_plugin: str, auth_params: str) -> ClientCertificate | None:
    """The client certificate of an AuthenticationTls configuration:
    `tlsCertFile:<path>,tlsKeyFile:<path>` or the same keys in JSON."""
    if auth_plugin not in TLS_PLUGINS:
        return None
    found = parameters(auth_params)
    cert, key = found.get("tlsCertFile", ""), found.get("tlsKeyFile", "")
    if not cert or not key:
        raise ConfigurationError(
            "authPlugin AuthenticationTls needs authParams tlsCertFile:<path>,tlsKeyFile:<path>"
        )
    for what, path in (("certificate", cert), ("key", key)):
        if not os.access(path, os.R_OK):
            raise ConfigurationError(f"cannot read the TLS client {what} file {path}")
    return ClientCertificate(cert, key)


@dataclass(frozen=True)
class OAuth2Settings:
    """The client-credentials flow: the issuer, the credentials file (JSON with client_id and
    client_secret: a path, file: URL or data: URL), the audience and scope asked for."""

    issuer_url: str
    private_key: str
    audience: str = ""
    scope: str = ""

    def client_json(self) -> str:
        """As the C++ client reads them (its keys are snake_case, the Java client's not)."""
        found = {"issuer_url": self.issuer_url, "private_key": self.private_key}
        found.update({k: v for k, v in (("audience", self.audience), ("scope", self.scope)) if v})
        return json.dumps(found)


def oauth2_from(auth_plugin: str, auth_params: str) -> OAuth2Settings | None:
    """AuthenticationOAuth2's settings, with the Java client's keys (issuerUrl, privateKey,
    audience, scope) or the C++ client's (issuer_url, private_key)."""
    if auth_plugin not in OAUTH2_PLUGINS:
        return None
    found = parameters(auth_params)
    issuer = found.get("issuerUrl") or found.get("issuer_url", "")
    private_key = found.get("privateKey") or found.get("private_key", "")
    if not issuer or not private_key:
        raise ConfigurationError(
            'authPlugin AuthenticationOAuth2 needs authParams {"issuerUrl": ..., "privateKey": ...}'
        )
    return OAuth2Settings(issuer, private_key, found.get("audience", ""), found.get("scope", ""))


def pulsar_authentication(auth_plugin: str, auth_params: str) -> pulsar.Authentication | None:
    """The Pulsar client's authentication, the parameters read here so that every form the
    Java client accepts works (the C++ client reads `file:/path` as an empty token, sends a
    token file's trailing newline, and knows OAuth2 only by snake_case keys)."""
    token = token_from(auth_plugin, auth_params)
    if token is not None:
        return pulsar.AuthenticationToken(token)
    certificate = certificate_from(auth_plugin, auth_params)
    if certificate is not None:
        return pulsar.AuthenticationTLS(certificate.cert_file, certificate.key_file)
    oauth2 = oauth2_from(auth_plugin, auth_params)
    if oauth2 is not None:
        return pulsar.AuthenticationOauth2(oauth2.client_json())
    if auth_plugin:
        return pulsar.Authentication(auth_plugin, auth_params)
    return None
