"""The broker admin REST transport: one client for every admin call the project makes.

URL and token checks, TLS trust, the client's certificate (mutual TLS) or OAuth2 bearer
token when the client authenticates by one, and redirects followed by hand. A broker
answers 307 with the owning broker's address (another host:port) for any method; httpx drops
`Authorization` on cross-origin redirects by design, which would turn every redirected call
into a 401. Brokers of one cluster share one token, so redirects are followed here and the
token kept; only an https-to-http hop is refused (the token in clear text). Errors are
Pulsar's `{"reason": "..."}` (`org/apache/pulsar/broker/web/RestException.java`).
"""

from __future__ import annotations

import json

import httpx

from config import ServiceConfiguration
from core.errors import ConfigurationError, MetadataError, TransientMetadataError
from transport import tls
from transport.auth import ClientCertificate, certificate_from, oauth2_from, token_from
from transport.oauth2 import ClientCredentials

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class AdminHttp:
    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout_seconds: float = 10,
        tls_trust_certs_file: str | None = None,
        tls_allow_insecure: bool = False,
        client: httpx.Client | None = None,
        certificate: ClientCertificate | None = None,
        oauth2: ClientCredentials | None = None,
    ) -> None:
        """`certificate`: presented in every TLS handshake; `oauth2`: the bearer token's
        source when the client authenticates by OAuth2 (closed with this client)."""
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL:
            raise ConfigurationError("admin URL (webServiceUrl) is not a valid URL") from None
        if url.userinfo:
            # URLs end up in error messages; credentials belong in the token.
            raise ConfigurationError("admin URL must not carry credentials; use the token")
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigurationError(f"admin URL must be http(s)://host[:port]: {base_url!r}")
        self.base = str(url).rstrip("/")
        self._secret = (token or "").strip()
        if self._secret and not self._secret.isprintable():
            raise ConfigurationError("admin token holds control characters (check its file)")
        auth = {"Authorization": f"Bearer {self._secret}"} if self._secret else {}
        self._headers = {"Accept": "application/json", **auth}
        self._oauth2 = oauth2
        self._certificate = certificate
        shown = [
            f"client certificate {certificate.cert_file}" if certificate else "",
            "a token" if self._secret else "",
            "an OAuth2 token" if oauth2 else "",
        ]
        self.presented = ", ".join(filter(None, shown)) or "none presented"
        self._timeout = timeout_seconds
        self.trust = "insecure" if tls_allow_insecure else tls_trust_certs_file or "system CAs"
        self._owns_client = client is None
        self._client = client or httpx.Client(
            timeout=timeout_seconds,
            verify=tls.verify(tls_trust_certs_file, tls_allow_insecure, certificate),
            follow_redirects=False,
            trust_env=False,  # a stray HTTP(S)_PROXY must not reroute admin calls and the token
        )

    @classmethod
    def from_config(cls, config: ServiceConfiguration) -> AdminHttp | None:
        """The brokers' admin REST API as configured (webServiceUrl, the client's
        authentication, TLS); None when no webServiceUrl is set."""
        if not config.web_service_url:
            return None
        plugin, params = config.auth_plugin, config.auth_params
        trust = config.tls_trust_certs_file_path or None
        insecure = config.tls_allow_insecure_connection
        oauth2 = oauth2_from(plugin, params)
        return cls(
            config.web_service_url,
            token_from(plugin, params),
            timeout_seconds=config.operation_timeout_seconds,
            tls_trust_certs_file=trust,
            tls_allow_insecure=insecure,
            certificate=certificate_from(plugin, params),
            oauth2=(
                ClientCredentials(
                    oauth2, config.operation_timeout_seconds, tls.issuer_verify(trust, insecure)
                )
                if oauth2 is not None
                else None
            ),
        )

    @property
    def has_token(self) -> bool:
        return bool(self._secret) or self._oauth2 is not None

    def request(self, method: str, path: str, body: object = None) -> httpx.Response:
        """Send, with `body` as JSON, following redirects by hand (see the module's doc)."""
        url = httpx.URL(self.base + path)
        content = None if body is None else json.dumps(body).encode()
        seen = {str(url)}
        for _ in range(MAX_REDIRECTS + 1):
            response = self._send(method, url, content)
            if response.status_code not in _REDIRECTS:
                return response
            location = response.headers.get("location")
            if not location:
                raise MetadataError(f"HTTP {response.status_code} without Location from {url}")
            try:
                target = url.join(location)
            except httpx.InvalidURL as exc:
                raise MetadataError(f"bad redirect from {url}: {exc}") from exc
            if target.scheme not in {"https", url.scheme}:
                raise MetadataError(f"refusing redirect from {url} to {target}")
            if str(target) in seen:
                # Two brokers each naming the other: ownership is moving, ask again shortly.
                raise TransientMetadataError(f"redirect loop between {url} and {target}")
            seen.add(str(target))
            method, url = _redirect_method(method, response.status_code), target
            if method == "GET":
                content = None
        raise TransientMetadataError(f"more than {MAX_REDIRECTS} redirects, last to {url}")

    def reason(self, response: httpx.Response) -> str:
        """Pulsar's JSON `reason`, or "": a bare 404 from a proxy or a wrong base path has
        none, so it can never pass for "topic not found"."""
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        reason = body.get("reason") if isinstance(body, dict) else None
        if response.status_code == 401 and not reason:
            # Jetty's or Jersey's bare 401: no credentials, or none the broker accepts.
            return (
                f"unauthenticated: the broker accepted none of our credentials ({self.presented})"
            )
        reason = reason[:300] if isinstance(reason, str) else ""
        return reason.replace(self._secret, "<token>") if self._secret else reason

    def close(self) -> None:
        if self._owns_client:
            self._client.close()
        if self._oauth2 is not None:
            self._oauth2.close()

    def _send(self, method: str, url: httpx.URL, content: bytes | None) -> httpx.Response:
        headers = self._headers
        if self._oauth2 is not None:
            headers = {**headers, "Authorization": f"Bearer {self._oauth2.token()}"}
        if content is not None:
            headers = {**headers, "Content-Type": "application/json"}
        try:
            return self._client.request(
                method, url, content=content, headers=headers, follow_redirects=False
            )
        except httpx.TimeoutException as exc:
            raise TransientMetadataError(f"{method} {url}: timed out ({self._timeout}s)") from exc
        except httpx.TransportError as exc:
            if self._certificate is not None and tls.ssl_refusal(exc):
                raise MetadataError(
                    f"{method} {url}: the broker refused our TLS client certificate "
                    f"{self._certificate.cert_file} ({tls.ssl_refusal(exc)})"
                ) from exc
            if tls.certificate_rejected(exc):
                # Retrying cannot make an untrusted certificate trusted: a configuration error.
                raise MetadataError(
                    f"{method} {url}: TLS certificate verification failed (trust: {self.trust})"
                ) from exc
            raise TransientMetadataError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc


def _redirect_method(method: str, status: int) -> str:
    """RFC 9110 15.4: 303 turns into GET; 301/302 may turn a POST into GET; 307/308 keep it."""
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        return "GET"
    return method
