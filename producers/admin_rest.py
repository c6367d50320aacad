"""The broker admin REST calls that set topics up and read namespace policies.

Redirects are followed by hand, keeping the token, for the reasons in deletion/admin.py
(a broker answers 307 with the owner's address; httpx would drop `Authorization`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import httpx

from deletion.admin import MAX_REDIRECTS, _path, _redirect_method, _verify
from deletion.topics import NamespaceName, TopicName
from ledger_janitor.errors import ConfigurationError, MetadataError, TransientMetadataError

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class AdminRest:
    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout_seconds: float = 10,
        tls_trust_certs_file: str | None = None,
        tls_allow_insecure: bool = False,
        client: httpx.Client | None = None,
    ) -> None:
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL:
            raise ConfigurationError("admin URL (webServiceUrl) is not a valid URL") from None
        if url.scheme not in ("http", "https") or not url.host or url.userinfo:
            raise ConfigurationError("admin URL must be http(s)://host[:port], no credentials")
        self._base = str(url).rstrip("/")
        self._secret = (token or "").strip()
        auth = {"Authorization": f"Bearer {self._secret}"} if self._secret else {}
        self._headers = {"Accept": "application/json", **auth}
        self._owns_client = client is None
        self._client = client or httpx.Client(
            timeout=timeout_seconds,
            verify=_verify(tls_trust_certs_file, tls_allow_insecure),
            follow_redirects=False,
            trust_env=False,
        )

    def put(
        self, topic: TopicName, operation: str, body: object, also_ok: Collection[int] = ()
    ) -> int:
        """PUT a JSON body to a topic's operation; the status, if 2xx or one of `also_ok`."""
        response = self._request("PUT", _path(topic, operation), body)
        if response.is_success or response.status_code in also_ok:
            return response.status_code
        raise self._error(response)

    def namespace_policy(self, namespace: NamespaceName, policy: str) -> Any:
        """A namespace policy's JSON; None when none is set (204, or 404 on older brokers)."""
        path = f"/admin/v2/namespaces/{namespace.tenant}/{namespace.namespace}/{policy}"
        response = self._request("GET", path, None)
        if response.status_code in (204, 404) or (response.is_success and not response.content):
            return None
        if not response.is_success:
            raise self._error(response)
        try:
            return json.loads(response.content)
        except ValueError as exc:
            raise MetadataError(f"{response.request.url}: malformed JSON: {exc}") from exc

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _request(self, method: str, path: str, body: object) -> httpx.Response:
        url = httpx.URL(self._base + path)
        content = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if content is not None:
            headers["Content-Type"] = "application/json"
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = self._client.request(method, url, content=content, headers=headers)
            except httpx.TransportError as exc:
                raise TransientMetadataError(f"{method} {url}: {type(exc).__name__}") from exc
            if response.status_code not in _REDIRECTS:
                return response
            target = url.join(response.headers.get("location", ""))
            if target.scheme not in {"https", url.scheme} or target == url:
                raise MetadataError(f"refusing redirect from {url} to {target}")
            method, url = _redirect_method(method, response.status_code), target
            if method == "GET":
                content = None
        raise TransientMetadataError(f"more than {MAX_REDIRECTS} redirects, last to {url}")

    def _error(self, response: httpx.Response) -> MetadataError:
        status, url = response.status_code, response.request.url
        try:
            reason = str(json.loads(response.content).get("reason", ""))[:300]
        except (ValueError, AttributeError):
            reason = ""
        if self._secret:
            reason = reason.replace(self._secret, "<token>")
        kind = TransientMetadataError if status == 429 or status >= 500 else MetadataError
        return kind(f"{response.request.method} {url}: HTTP {status} {reason}".rstrip())
