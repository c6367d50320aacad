"""Loopback HTTP(S) servers serving recorded broker JSON, and the fixtures the admin-API
in-use source's tests share."""

from __future__ import annotations

import copy
import json
import ssl
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core.clock import EpochSeconds
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain.topics import NamespaceName, TopicName
from harness.pki import Pki, make_pki
from transport.admin_http import AdminHttp

TOKEN = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXJvbGU.Zm9yLXRlc3RzLW9ubHk"


NOW = EpochSeconds(1714644930.25)


TOPIC = TopicName.parse("persistent://acme/orders/invoices")


STATS_PATH = "/admin/v2/persistent/acme/orders/invoices/internalStats"


# What a Pulsar 3.x broker answers for `pulsar-admin topics stats-internal`: two offloaded
# ledgers, the open ledger, a subscription whose cursor has no ledger yet (-1), the dedup
# cursor, one schema ledger and a topic that was never compacted (-1).
RECORDED: dict[str, Any] = json.loads(
    """
{
  "entriesAddedCounter": 1200,
  "numberOfEntries": 3400,
  "totalSize": 1734000,
  "currentLedgerEntries": 200,
  "currentLedgerSize": 102000,
  "lastLedgerCreatedTimestamp": "2024-05-02T10:15:30.123Z",
  "waitingCursorsCount": 1,
  "pendingAddEntriesCount": 0,
  "lastConfirmedEntry": "118:199",
  "state": "LedgerOpened",
  "ledgers": [
    {"ledgerId": 101, "entries": 1000, "size": 510000, "offloaded": true,
     "underReplicated": false},
    {"ledgerId": 107, "entries": 1000, "size": 510000, "offloaded": true,
     "underReplicated": false},
    {"ledgerId": 112, "entries": 1200, "size": 612000, "offloaded": false,
     "underReplicated": false},
    {"ledgerId": 118, "entries": 200, "size": 102000, "offloaded": false,
     "underReplicated": false}
  ],
  "cursors": {
    "billing": {
      "markDeletePosition": "112:599", "readPosition": "112:600", "waitingReadOp": false,
      "pendingReadOps": 0, "messagesConsumedCounter": 2200, "cursorLedger": 115,
      "cursorLedgerLastEntry": 7, "individuallyDeletedMessages": "[(112:650..112:700]]",
      "lastLedgerSwitchTimestamp": "2024-05-02T10:01:02.003Z", "state": "Open", "active": true,
      "numberOfEntriesSinceFirstNotAckedMessage": 1, "totalNonContiguousDeletedMessagesRange": 1,
      "subscriptionHavePendingRead": false, "subscriptionHavePendingReplayRead": false,
      "properties": {}
    },
    "idle+sub": {
      "markDeletePosition": "118:-1", "readPosition": "118:0", "cursorLedger": -1,
      "cursorLedgerLastEntry": -1, "state": "NoLedger", "properties": {}
    },
    "pulsar.dedup": {
      "markDeletePosition": "118:198", "readPosition": "118:199", "cursorLedger": 120,
      "cursorLedgerLastEntry": 3, "state": "Open", "properties": {}
    }
  },
  "schemaLedgers": [
    {"ledgerId": 42, "entries": 1, "size": 230, "offloaded": false, "underReplicated": false}
  ],
  "compactedLedger": {
    "ledgerId": -1, "entries": -1, "size": -1, "offloaded": false, "underReplicated": false
  }
}
"""
)


RECORDED_IDS = {101, 107, 112, 118, 115, 120, 42}


Reply = tuple[int, dict[str, str], bytes]


def reply(status: int, body: object, **headers: str) -> Reply:
    return status, {"Content-Type": "application/json", **headers}, json.dumps(body).encode()


def pulsar_error(status: int, reason: str) -> Reply:
    return reply(status, {"reason": reason})  # RestException's ErrorData


def stats(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(RECORDED)
    for key, value in changes.items():
        if value is None:
            del body[key]
        else:
            body[key] = value
    return body


@dataclass(frozen=True)
class Seen:
    path: str
    authorization: str | None


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (the time-out test) is expected


class Server:
    """A loopback HTTP(S) server answering with `respond`, recording what it was asked."""

    def __init__(self, respond: Callable[[Seen], Reply], tls: ssl.SSLContext | None) -> None:
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen = Seen(self.path, self.headers.get("Authorization"))
                outer.seen.append(seen)
                status, headers, body = respond(seen)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _Quiet(("127.0.0.1", 0), Handler)
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


Serve = Callable[..., Server]


Connect = Callable[..., AdminApiInUseLedgers]


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[Server] = []

    def start(respond: Callable[[Seen], Reply], tls: ssl.SSLContext | None = None) -> Server:
        servers.append(Server(respond, tls))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def schemas(tmp_path: Path) -> Iterator[SqliteMetadataStore]:
    """The metadata store a topic's schema locators are read from when the broker has no
    such topic: a real (embedded) store, laid out as a cluster's that holds the namespaces
    `acme/orders` and `acme/other` (the absence of a locator means something only there),
    and no locator unless a test writes one."""
    store = SqliteMetadataStore(tmp_path / "metadata.db")
    writer = ManagedLedgerWriter(store)
    writer.lay_out()
    for namespace in ("acme/orders", "acme/other"):
        writer.ensure_namespace(NamespaceName.parse(namespace))
    yield store
    store.close()


@pytest.fixture
def connect(schemas: SqliteMetadataStore) -> Iterator[Connect]:
    adapters: list[AdminApiInUseLedgers] = []

    def make(url: str, **options: Any) -> AdminApiInUseLedgers:
        options.setdefault("token", TOKEN)
        options.setdefault("timeout_seconds", 2)
        in_use_schemas = options.pop("schemas", schemas)
        http = AdminHttp(url, **options)
        adapters.append(AdminApiInUseLedgers(http, clock=lambda: NOW, schemas=in_use_schemas))
        return adapters[-1]

    yield make
    for adapter in adapters:
        adapter.close()


def raised(action: Callable[[], object], kind: type[Exception]) -> Exception:
    with pytest.raises(kind) as info:
        action()
    text = "".join(traceback.format_exception(info.value)) + repr(info.value)
    assert TOKEN not in text
    return info.value


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))
