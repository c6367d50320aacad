"""The one admin REST transport: how a request with a body is redirected, on a loopback
server that records what arrives (method, path, body, content type, token)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from transport.admin_http import AdminHttp, _redirect_method


@dataclass(frozen=True)
class Arrived:
    method: str
    path: str
    body: bytes
    content_type: str | None
    authorization: str | None


@pytest.fixture
def broker() -> Iterator[tuple[str, list[Arrived]]]:
    """Answers /first with the status in the query's `status=` and Location /second;
    everything else with 204. Records every request."""
    arrived: list[Arrived] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            arrived.append(
                Arrived(
                    self.command,
                    self.path,
                    body,
                    self.headers.get("Content-Type"),
                    self.headers.get("Authorization"),
                )
            )
            if self.path.startswith("/first"):
                self.send_response(int(self.path.split("status=")[1]))
                self.send_header("Location", "/second")
            else:
                self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_PUT = do_POST = do_HEAD = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", arrived
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("method", "status", "then"),
    [
        ("PUT", 303, "GET"),
        ("POST", 303, "GET"),
        ("GET", 303, "GET"),
        ("HEAD", 303, "HEAD"),
        ("POST", 301, "GET"),
        ("POST", 302, "GET"),
        ("PUT", 301, "PUT"),
        ("PUT", 302, "PUT"),
        ("POST", 307, "POST"),
        ("PUT", 307, "PUT"),
        ("POST", 308, "POST"),
    ],
)
def test_the_method_after_a_redirect_is_rfc_9110s(method: str, status: int, then: str) -> None:
    assert _redirect_method(method, status) == then


@pytest.mark.parametrize("status", [307, 308])
def test_a_put_redirected_to_the_owner_keeps_its_body_type_and_token(
    broker: tuple[str, list[Arrived]], status: int
) -> None:
    url, arrived = broker
    http = AdminHttp(url, token="secret")
    try:
        assert http.request("PUT", f"/first?status={status}", {"partitions": 4}).status_code == 204
    finally:
        http.close()
    assert [(a.method, a.path) for a in arrived] == [
        ("PUT", f"/first?status={status}"),
        ("PUT", "/second"),
    ]
    for hop in arrived:
        assert (hop.body, hop.content_type) == (b'{"partitions": 4}', "application/json")
        assert hop.authorization == "Bearer secret"


def test_a_put_answered_303_is_followed_by_a_get_without_a_body(
    broker: tuple[str, list[Arrived]],
) -> None:
    url, arrived = broker
    http = AdminHttp(url)
    try:
        http.request("PUT", "/first?status=303", 4)
    finally:
        http.close()
    assert [(a.method, a.body, a.content_type) for a in arrived] == [
        ("PUT", b"4", "application/json"),
        ("GET", b"", None),
    ]


def test_a_request_without_a_body_sends_none(broker: tuple[str, list[Arrived]]) -> None:
    url, arrived = broker
    http = AdminHttp(url)
    try:
        http.request("GET", "/policy")
    finally:
        http.close()
    assert [(a.method, a.body, a.content_type) for a in arrived] == [("GET", b"", None)]
