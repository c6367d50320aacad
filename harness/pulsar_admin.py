"""The tests' own admin REST calls to a real broker (httpx, nothing of the product's): set up
tenants, namespaces and topics, and read back what the broker itself says, as ground truth."""

from __future__ import annotations

import ssl
import time
from typing import Any
from urllib.parse import quote

import httpx

from deletion.domain.topics import NamespaceName, TopicName


class BrokerAdmin:
    def __init__(
        self, web_url: str, token: str | None = None, verify: ssl.SSLContext | bool = True
    ) -> None:
        """`verify`: for an https:// broker, a context trusting its CA (and presenting a
        client certificate, for one that authenticates by it)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(
            base_url=web_url,
            timeout=60,
            headers=headers,
            follow_redirects=True,
            trust_env=False,
            verify=verify,
        )

    def close(self) -> None:
        self.http.close()

    def _ok(self, response: httpx.Response, *also: int) -> httpx.Response:
        if not response.is_success and response.status_code not in also:
            raise AssertionError(
                f"{response.request.method} {response.request.url}: HTTP "
                f"{response.status_code} {response.text[:500]}"
            )
        return response

    def get(self, path: str, *also: int) -> Any:
        response = self._ok(self.http.get(path), *also)
        return response.json() if response.content else None

    def put(self, path: str, body: Any = None, *also: int) -> None:
        self._ok(self.http.put(path, json=body), *also)

    def post(self, path: str, body: Any = None, *also: int) -> None:
        self._ok(self.http.post(path, json=body), *also)

    def delete(self, path: str, *also: int) -> None:
        self._ok(self.http.delete(path), *also)

    def create_namespace(self, namespace: NamespaceName) -> None:
        clusters = self.get("/admin/v2/clusters")
        self.put(f"/admin/v2/tenants/{namespace.tenant}", {"allowedClusters": clusters}, 409)
        self.put(f"/admin/v2/namespaces/{namespace}", None, 409)

    @staticmethod
    def topic_path(topic: TopicName) -> str:
        ns = topic.namespace
        return f"/admin/v2/persistent/{ns.tenant}/{ns.namespace}/{quote(topic.local_name, safe='')}"

    def internal_stats(self, topic: TopicName) -> dict[str, Any]:
        stats: dict[str, Any] = self.get(f"{self.topic_path(topic)}/internalStats")
        return stats

    def topics(self, namespace: NamespaceName) -> list[str]:
        found: list[str] = self.get(f"/admin/v2/persistent/{namespace}")
        return found

    def partitioned_topics(self, namespace: NamespaceName) -> list[str]:
        found: list[str] = self.get(f"/admin/v2/persistent/{namespace}/partitioned")
        return found

    def create_partitioned(self, topic: TopicName, partitions: int) -> None:
        self.put(f"{self.topic_path(topic)}/partitions", partitions)

    def offload(self, topic: TopicName, timeout: float = 120) -> None:
        """Offload everything before the current ledger and wait until it succeeded."""
        stats = self.internal_stats(topic)
        last = stats["lastConfirmedEntry"]
        ledger, entry = (int(part) for part in last.split(":"))
        self.put(f"{self.topic_path(topic)}/offload", {"ledgerId": ledger, "entryId": entry})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.get(f"{self.topic_path(topic)}/offload")
            if status["status"] == "SUCCESS":
                return
            if status["status"] == "ERROR":
                raise AssertionError(f"offload of {topic} failed: {status}")
            time.sleep(0.5)
        raise AssertionError(f"offload of {topic} did not finish within {timeout}s")
