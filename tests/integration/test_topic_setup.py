"""Topics and subscriptions made before the first send: the admin calls against a loopback
admin server recording the real request shapes, and the client-side path on pulsar-lite."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pulsar
import pytest

from core.errors import MetadataError, TransientMetadataError
from deletion.domain.topics import ARCHIVE_SUBSCRIPTION, SUBSCRIPTION, NamespaceName, TopicName
from harness.janitor import JanitorFactory
from producers.admin_rest import AdminRest
from producers.namespace_policies import policy_risks
from producers.topic_setup import AdminTopicSetup, PreparedNamespaces
from tests.reliability.oracle import pending
from transport.admin_http import AdminHttp

TOKEN = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXJvbGU.Zm9yLXRlc3RzLW9ubHk"
NS = NamespaceName("acme", "orders")
BASE = "/admin/v2/persistent/acme/orders"
RETRY = "__ledger_deletion-ledger-deletion-worker-RETRY"
EARLIEST = {"ledgerId": -1, "entryId": -1}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: Any
    authorization: str | None
    content_type: str | None


Reply = tuple[int, bytes]


class AdminServer:
    """Answers with `respond`; records method, path, JSON body and headers of every call."""

    def __init__(self, respond: Callable[[Request], Reply]) -> None:
        self.seen: list[Request] = []
        self.location: str | None = None  # where a redirect points, the path appended
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = Request(
                    self.command,
                    self.path,
                    json.loads(raw) if raw else None,
                    self.headers.get("Authorization"),
                    self.headers.get("Content-Type"),
                )
                outer.seen.append(request)
                status, body = respond(request)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                if outer.location is not None:
                    self.send_header("Location", outer.location + self.path)
                if body:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[Request], Reply]], AdminServer]]:
    servers: list[AdminServer] = []

    def start(respond: Callable[[Request], Reply]) -> AdminServer:
        servers.append(AdminServer(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def no_content(_: Request) -> Reply:
    return 204, b""


def test_first_send_creates_the_partitioned_topic_and_every_subscription(serve: Any) -> None:
    server = serve(no_content)
    admin = AdminRest(AdminHttp(server.url, TOKEN))
    prepared = PreparedNamespaces(AdminTopicSetup(admin, partitions=6))
    prepared.ensure_topic(NS.deletion_topic)
    prepared.ensure_topic(NS.retry_topic)  # the same namespace: nothing more is asked
    prepared.ensure_topic(NS.archive_topic)
    admin.close()
    assert [(r.method, r.path, r.body) for r in server.seen] == [
        ("PUT", f"{BASE}/__ledger_deletion/partitions", 6),
        ("PUT", f"{BASE}/__ledger_deletion/subscription/{SUBSCRIPTION}", EARLIEST),
        ("PUT", f"{BASE}/{RETRY}/subscription/{SUBSCRIPTION}", EARLIEST),
        ("PUT", f"{BASE}/__ledger_deletion_archive/subscription/{ARCHIVE_SUBSCRIPTION}", EARLIEST),
    ]
    assert {r.authorization for r in server.seen} == {f"Bearer {TOKEN}"}
    assert {r.content_type for r in server.seen} == {"application/json"}


def test_what_already_exists_is_fine(serve: Any) -> None:
    exists = json.dumps({"reason": "Partitioned topic already exist"}).encode()
    server = serve(lambda request: (409, exists))
    admin = AdminRest(AdminHttp(server.url))
    PreparedNamespaces(AdminTopicSetup(admin, partitions=4)).ensure(NS)
    admin.close()
    assert len(server.seen) == 4 and server.seen[0].authorization is None


def test_a_failed_setup_fails_the_send_and_is_tried_again(serve: Any) -> None:
    answers = iter([(503, b'{"reason": "not ready"}'), (403, b'{"reason": "no"}')])
    server = serve(lambda request: next(answers, (204, b"")))
    admin = AdminRest(AdminHttp(server.url, TOKEN))
    prepared = PreparedNamespaces(AdminTopicSetup(admin, partitions=4))
    with pytest.raises(TransientMetadataError, match="503"):
        prepared.ensure(NS)
    with pytest.raises(MetadataError, match="403"):
        prepared.ensure(NS)
    prepared.ensure(NS)
    prepared.ensure(NS)
    admin.close()
    assert len(server.seen) == 2 + 4


def test_a_redirect_to_the_owner_keeps_method_body_and_token(serve: Any) -> None:
    owner = serve(no_content)
    front = serve(lambda request: (307, b""))
    front.location = owner.url  # as a broker that does not own the topic answers
    admin = AdminRest(AdminHttp(front.url, TOKEN))
    admin.put(TopicName.parse(NS.deletion_topic), "partitions", 4)
    admin.close()
    assert [(r.method, r.body, r.authorization) for r in owner.seen] == [
        ("PUT", 4, f"Bearer {TOKEN}")
    ]
    assert owner.seen[0].path == front.seen[0].path == f"{BASE}/__ledger_deletion/partitions"


POLICIES = {
    "retention": (204, b""),
    "inactiveTopicPolicies": (204, b""),
    "subscriptionExpirationTime": (204, b""),
    "permissions": (200, b"{}"),  # what a broker with authorization off answers
}


def policies(**answers: object) -> Callable[[Request], Reply]:
    def respond(request: Request) -> Reply:
        name = request.path.rsplit("/", 1)[1]
        if name in answers:
            return 200, json.dumps(answers[name]).encode()
        return POLICIES[name]

    return respond


def test_broker_defaults_warn_only_about_the_archive_without_retention(serve: Any) -> None:
    server = serve(policies())
    admin = AdminRest(AdminHttp(server.url, TOKEN))
    risks = policy_risks(admin, NS)
    admin.close()
    assert [r.path for r in server.seen] == [
        "/admin/v2/namespaces/acme/orders/inactiveTopicPolicies",
        "/admin/v2/namespaces/acme/orders/retention",
        "/admin/v2/namespaces/acme/orders/subscriptionExpirationTime",
        "/admin/v2/namespaces/acme/orders/permissions",
        "/admin/v2/persistent/acme/orders/__ledger_deletion/permissions",
    ]
    assert {r.method for r in server.seen} == {"GET"}
    assert len(risks) == 1 and "set-retention acme/orders" in risks[0]


def test_expiring_subscriptions_with_inactive_topic_deletion_are_named(serve: Any) -> None:
    inactive = {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions",
        "maxInactiveDurationSeconds": 60,
        "deleteWhileInactive": True,
    }
    retention = {"retentionTimeInMinutes": -1, "retentionSizeInMB": 1024}
    server = serve(
        policies(inactiveTopicPolicies=inactive, retention=retention, subscriptionExpirationTime=30)
    )
    admin = AdminRest(AdminHttp(server.url))
    risks = policy_risks(admin, NS)
    admin.close()
    assert len(risks) == 2
    assert "set-subscription-expiration-time" in risks[0]
    assert "--disable-delete-while-inactive" in risks[1]


def test_no_admin_means_no_policy_check(embedded: JanitorFactory) -> None:
    assert embedded.sidecar().policy_risks() == {}


def test_without_an_admin_url_phase_one_subscribes_before_its_first_send(
    embedded: JanitorFactory,
) -> None:
    namespace = NamespaceName(f"t{uuid.uuid4().hex[:10]}", "ns")
    sidecar = embedded.sidecar(send_delay_seconds_of_two_phase_deletion=0)
    topic = TopicName(namespace, "orders")
    sidecar.phase_one.enqueue([pending(topic, 41)])
    sidecar.pool.send(namespace.archive_topic, b"archived", {}).result(timeout=30)
    # Joining at Latest, a subscription made now would see neither message; the ones phase
    # one made before sending still hold them.
    for topics, name, expected in (
        (namespace.deletion_topic, SUBSCRIPTION, None),
        (namespace.archive_topic, ARCHIVE_SUBSCRIPTION, b"archived"),
    ):
        consumer = sidecar.client.subscribe(
            topics,
            name,
            consumer_type=pulsar.ConsumerType.Shared,
            initial_position=pulsar.InitialPosition.Latest,
        )
        try:
            received = consumer.receive(10_000)
            if expected is not None:
                assert received.data() == expected
            consumer.acknowledge(received)
        finally:
            consumer.close()
