"""OAuth2's client-credentials flow (RFC 6749 4.4), as Pulsar's AuthenticationOAuth2 runs it,
for the admin REST client (the Pulsar client runs its own): the issuer's token endpoint
from its discovery document (`/.well-known/openid-configuration`), then a token for the
client id and secret of the credentials file, kept until shortly before it expires."""

from __future__ import annotations

import base64
import json
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import httpx

from config import ServiceConfiguration
from core.errors import ConfigurationError, MetadataError, TransientMetadataError
from transport import tls
from transport.auth import OAuth2Settings, oauth2_from

DISCOVERY = "/.well-known/openid-configuration"


def read_credentials(private_key: str) -> dict[str, Any]:
    """The credentials file's JSON (client_id, client_secret): `/path`, `file:/path`,
    `file:///path` or `data:application/json;base64,<...>`."""
    try:
        if private_key.startswith("data:"):
            text = base64.b64decode(private_key.split(",", 1)[-1]).decode()
        else:
            path = (
                unquote(urlparse(private_key).path)
                if private_key.startswith("file:")
                else private_key
            )
            text = Path(path).read_text()
        found = json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(
            f"cannot read the OAuth2 credentials {private_key}: {exc}"
        ) from None
    if not isinstance(found, dict) or not found.get("client_id") or not found.get("client_secret"):
        raise ConfigurationError(
            f"the OAuth2 credentials {private_key} lack client_id/client_secret"
        )
    return found


class ClientCredentials:
    """A bearer token for the admin REST API, fetched when first needed and again when it
    is about to expire (`clock`: seconds, monotonic)."""

    def __init__(
        self,
        settings: OAuth2Settings,
        timeout_seconds: float,
        verify: ssl.SSLContext | bool = True,
        clock: Callable[[], float] = time.monotonic,
        client: httpx.Client | None = None,
    ) -> None:
        self._settings = settings
        self._credentials = read_credentials(settings.private_key)
        self._clock = clock
        self._token = ""
        self._good_until = 0.0
        self._http = client or httpx.Client(timeout=timeout_seconds, verify=verify, trust_env=False)

    def token(self) -> str:
        if not self._token or self._clock() >= self._good_until:
            asked_at = self._clock()
            answer = self._exchange()
            self._token = str(answer["access_token"])
            lifetime = float(answer.get("expires_in") or 3600)
            # Renewed a little early: a token must not expire on its way to the broker.
            self._good_until = asked_at + max(lifetime - 30, lifetime / 2)
        return self._token

    def close(self) -> None:
        self._http.close()

    def _exchange(self) -> dict[str, Any]:
        issuer = self._settings.issuer_url.rstrip("/")
        discovery = self._json("GET", issuer + DISCOVERY)
        endpoint = discovery.get("token_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            raise MetadataError(f"the OAuth2 issuer {issuer} names no token_endpoint")
        form = {
            "grant_type": "client_credentials",
            "client_id": str(self._credentials["client_id"]),
            "client_secret": str(self._credentials["client_secret"]),
        }
        form.update({k: v for k, v in (("audience", self._settings.audience),
                                         ("scope", self._settings.scope)) if v})  # fmt: skip
        answer = self._json("POST", endpoint, form)
        if not answer.get("access_token"):
            raise MetadataError(f"the OAuth2 token endpoint {endpoint} returned no access_token")
        return answer

    def _json(self, method: str, url: str, form: dict[str, str] | None = None) -> dict[str, Any]:
        try:
            response = self._http.request(method, url, data=form)
        except httpx.HTTPError as exc:
            raise TransientMetadataError(f"OAuth2 issuer: {method} {url}: {exc}") from exc
        if response.status_code >= 500:
            raise TransientMetadataError(
                f"OAuth2 issuer: {method} {url}: HTTP {response.status_code}"
            )
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_error or not isinstance(body, dict):
            error = body.get("error", "") if isinstance(body, dict) else ""
            status = f"HTTP {response.status_code} {error}".rstrip()
            raise MetadataError(f"the OAuth2 issuer refused {method} {url}: {status}")
        return body


def issuer_refusal(config: ServiceConfiguration) -> str | None:
    """Why the configured OAuth2 issuer will not give us a token (a wrong secret, say: the
    Pulsar client would only report the broker's AuthenticationError); None if it does, if
    it cannot be asked just now, or if OAuth2 is not configured."""
    settings = oauth2_from(config.auth_plugin, config.auth_params)
    if settings is None:
        return None
    verify = tls.issuer_verify(
        config.tls_trust_certs_file_path or None, config.tls_allow_insecure_connection
    )
    source = ClientCredentials(settings, min(config.operation_timeout_seconds, 10), verify)
    try:
        source.token()
    except TransientMetadataError:
        return None
    except MetadataError as exc:
        return str(exc)
    finally:
        source.close()
    return None
