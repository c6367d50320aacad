"""The broker admin REST calls that set topics up and read namespace policies.

Through the one admin transport (`transport/admin_http.py`): redirects followed by hand,
keeping the token.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

import httpx
import structlog

from core.errors import MetadataError, TransientMetadataError
from deletion.adapters.admin_api import rest_path
from deletion.domain.topics import NamespaceName, TopicName, java_url_encode
from transport.admin_http import AdminHttp
from transport.schema_registration import Register

log = structlog.get_logger(__name__)


class AdminRest:
    """Phase one's admin calls over `http`, which it owns (closes) and lends to the
    admin-API in-use source, so one sidecar talks to the brokers through one client."""

    def __init__(self, http: AdminHttp) -> None:
        self.http = http

    def put(
        self, topic: TopicName, operation: str, body: object, also_ok: Collection[int] = ()
    ) -> int:
        """PUT a JSON body to a topic's operation; the status, if 2xx or one of `also_ok`."""
        response = self.http.request("PUT", rest_path(topic, operation), body)
        if response.is_success or response.status_code in also_ok:
            return response.status_code
        raise self._error(response)

    def post_schema(self, topic: TopicName, definition: Mapping[str, Any]) -> int:
        """Register an AVRO schema on `topic`; the status (2xx; 409: it holds another; any
        other answer but a transient one: this broker would not, and the producers register
        it themselves). Transient answers (429, 502-504) raise, to be retried."""
        ns = topic.namespace
        path = f"/admin/v2/schemas/{ns}/{java_url_encode(topic.local_name)}/schema"
        body = {"type": "AVRO", "schema": json.dumps(definition), "properties": {}}
        response = self.http.request("POST", path, body)
        if response.status_code in (429, 502, 503, 504):
            raise self._error(response)
        return response.status_code

    def schema_registrar(self, definition: Mapping[str, Any]) -> Register:
        """Registers `definition` on a topic with one admin call (one put in the broker's
        registry, however many partitions the topic has): see transport/schema_registration.py.
        True when the registry holds it or holds another (409: the producer then says so);
        False when this broker would not (no rights, no such endpoint): the client then
        registers it through the topic's first partition."""

        def register(topic: str) -> bool:
            status = self.post_schema(TopicName.parse(topic), definition)
            if status < 400 or status == 409:
                return True
            log.warning(
                "the broker did not register our schema through its admin API; "
                "registering it through the topic's first partition",
                topic=topic,
                status=status,
            )
            return False

        return register

    def namespace_policy(self, namespace: NamespaceName, policy: str) -> Any:
        """A namespace policy's JSON; None when none is set (204, or 404 on older brokers)."""
        path = f"/admin/v2/namespaces/{namespace.tenant}/{namespace.namespace}/{policy}"
        return self._policy(path)

    def topic_policy(self, topic: TopicName, policy: str) -> Any:
        """A topic's policy JSON (its permissions, say); None when none is set or no topic."""
        return self._policy(rest_path(topic, policy))

    def _policy(self, path: str) -> Any:
        response = self.http.request("GET", path)
        if response.status_code in (204, 404) or (response.is_success and not response.content):
            return None
        if not response.is_success:
            raise self._error(response)
        try:
            return json.loads(response.content)
        except ValueError as exc:
            raise MetadataError(f"{response.request.url}: malformed JSON: {exc}") from exc

    def close(self) -> None:
        self.http.close()

    def _error(self, response: httpx.Response) -> MetadataError:
        status, url = response.status_code, response.request.url
        reason = self.http.reason(response)
        kind = TransientMetadataError if status == 429 or status >= 500 else MetadataError
        return kind(f"{response.request.method} {url}: HTTP {status} {reason}".rstrip())
