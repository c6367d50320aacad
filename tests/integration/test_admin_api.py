"""AdminApiInUseLedgers against real HTTP(S) servers on loopback serving recorded broker JSON."""

from __future__ import annotations

import copy
import datetime
import ipaddress
import itertools
import json
import socket
import ssl
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from core.clock import EpochSeconds
from core.errors import (
    ConfigurationError,
    DecodeError,
    MetadataError,
    TransientMetadataError,
)
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain.topics import TopicName
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator
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
    such topic: a real (embedded) store, empty unless a test writes a locator."""
    store = SqliteMetadataStore(tmp_path / "metadata.db")
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


def test_recorded_internal_stats(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: reply(200, stats()))
    found = connect(broker.url).fetch(TOPIC)
    assert found.exists and found.topic == TOPIC and found.fetched_at == NOW
    # offloaded ledgers count; a cursor without a ledger and a never-compacted topic do not
    assert found.ledger_ids == RECORDED_IDS
    assert broker.seen == [Seen(STATS_PATH, f"Bearer {TOKEN}")]


def test_compacted_ledger_is_in_use(serve: Serve, connect: Connect) -> None:
    compacted = {"ledgerId": 130, "entries": 17, "size": 2048, "offloaded": False}
    broker = serve(lambda seen: reply(200, stats(compactedLedger=compacted)))
    assert connect(broker.url).fetch(TOPIC).ledger_ids == RECORDED_IDS | {130}


def test_local_name_is_encoded_as_the_java_admin_client_does(
    serve: Serve, connect: Connect
) -> None:
    broker = serve(lambda seen: reply(200, stats()))
    topic = TopicName.parse("persistent://acme/orders/a b:c%d~e*f")
    assert connect(broker.url).fetch(topic).topic == topic
    assert broker.seen[0].path == "/admin/v2/persistent/acme/orders/a+b%3Ac%25d%7Ee*f/internalStats"


def test_a_partition_is_fetched_by_its_own_name(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: reply(200, stats()))
    partition = TopicName.parse("acme/orders/invoices-partition-3")
    assert connect(broker.url).fetch(partition).topic == partition
    assert broker.seen[0].path.endswith("/acme/orders/invoices-partition-3/internalStats")


def test_partitioned_internal_stats_and_a_dropped_partition(serve: Serve, connect: Connect) -> None:
    base = TopicName.parse("persistent://acme/orders/a b:c%d")
    encoded = "/admin/v2/persistent/acme/orders/a+b%3Ac%25d"
    partitioned = {
        "metadata": {"partitions": 3, "properties": {}, "deleted": False},
        "partitions": {
            "persistent://acme/orders/a b:c%d-partition-0": stats(),
            "persistent://acme/orders/a b:c%d-partition-1": stats(
                ledgers=[{"ledgerId": 201, "entries": 5, "size": 50, "offloaded": False}],
                lastConfirmedEntry="201:4",
            ),
        },
    }

    def respond(seen: Seen) -> Reply:
        if seen.path == f"{encoded}/partitioned-internalStats":
            return reply(200, partitioned)
        return pulsar_error(404, "Topic persistent://acme/orders/a b:c%d-partition-2 not found")

    broker = serve(respond)
    found = connect(broker.url).fetch_partitioned(base)
    parts = [TopicName(base.namespace, f"a b:c%d-partition-{i}") for i in range(3)]
    assert set(found) == set(parts)
    assert found[parts[0]].ledger_ids == RECORDED_IDS
    assert found[parts[1]].ledger_ids == {201, 115, 120, 42}
    assert {snapshot.fetched_at for snapshot in found.values()} == {NOW}
    # the broker leaves out partitions whose stats failed; the missing one is asked directly
    assert not found[parts[2]].exists
    assert [s.path for s in broker.seen][1] == f"{encoded}-partition-2/internalStats"


def test_partitioned_lookup_failures(serve: Serve, connect: Connect) -> None:
    foreign = "persistent://acme/other/invoices-partition-0"
    answers = iter(
        [
            pulsar_error(404, "Partitioned Topic persistent://acme/orders/invoices not found"),
            pulsar_error(404, "Internal topics have not been generated yet"),
            reply(200, {"metadata": {"partitions": 1}, "partitions": {foreign: stats()}}),
        ]
    )
    adapter = connect(serve(lambda seen: next(answers)).url)
    assert adapter.fetch_partitioned(TOPIC) == {}
    error = raised(lambda: adapter.fetch_partitioned(TOPIC), TransientMetadataError)
    assert "HTTP 404: Internal topics have not been generated yet" in str(error)
    error = raised(lambda: adapter.fetch_partitioned(TOPIC), DecodeError)
    assert str(error) == f"{PARTITIONED}: unexpected partition {foreign!r}"
    with pytest.raises(ValueError, match="is a partition"):
        adapter.fetch_partitioned(TopicName.parse("acme/orders/invoices-partition-0"))


PARTITIONED = "partitioned-internalStats of persistent://acme/orders/invoices"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], f"{PARTITIONED}: expected a JSON dict, got list"),
        ({"partitions": {}}, f"{PARTITIONED}: metadata: expected a JSON dict, got NoneType"),
        ({"metadata": {"partitions": 1}}, f"{PARTITIONED}: partitions: expected a JSON dict"),
        # partition 2 of 2, and a name that is no partition at all
        (
            {"metadata": {"partitions": 2}, "partitions": {f"{TOPIC}-partition-2": RECORDED}},
            f"{PARTITIONED}: unexpected partition '{TOPIC}-partition-2'",
        ),
        (
            {"metadata": {"partitions": 2}, "partitions": {str(TOPIC): RECORDED}},
            f"{PARTITIONED}: unexpected partition '{TOPIC}'",
        ),
    ],
)
def test_malformed_partitioned_answers_are_decode_errors(
    serve: Serve, connect: Connect, body: object, message: str
) -> None:
    adapter = connect(serve(lambda seen: reply(200, body)).url)
    assert str(raised(lambda: adapter.fetch_partitioned(TOPIC), DecodeError)).startswith(message)


@pytest.mark.parametrize("status", [307, 308, 301, 302, 303])
def test_redirect_to_the_owner_keeps_the_token(serve: Serve, connect: Connect, status: int) -> None:
    def owner_answer(seen: Seen) -> Reply:
        if seen.authorization != f"Bearer {TOKEN}":
            return pulsar_error(401, "Authentication required")
        return reply(200, stats())

    owner = serve(owner_answer)
    location = f"{owner.url}{STATS_PATH}?authoritative=true"
    front = serve(lambda seen: (status, {"Location": location}, b""))
    assert connect(front.url).fetch(TOPIC).ledger_ids == RECORDED_IDS
    assert owner.seen == [Seen(f"{STATS_PATH}?authoritative=true", f"Bearer {TOKEN}")]


def test_redirect_loop_and_endless_redirects(serve: Serve, connect: Connect) -> None:
    urls: dict[str, str] = {}
    a = serve(lambda seen: (307, {"Location": urls["b"] + STATS_PATH}, b""))
    b = serve(lambda seen: (307, {"Location": urls["a"] + STATS_PATH}, b""))
    urls.update(a=a.url, b=b.url)
    error = raised(lambda: connect(a.url).fetch(TOPIC), TransientMetadataError)
    assert "loop" in str(error)
    assert len(a.seen) == len(b.seen) == 1  # the first URL asked counts as seen
    # A loop that does not pass through the first URL: a -> b -> c -> b.
    c = serve(lambda seen: (307, {"Location": urls["b"] + STATS_PATH}, b""))
    b2 = serve(lambda seen: (307, {"Location": urls["c"] + STATS_PATH}, b""))
    a2 = serve(lambda seen: (307, {"Location": urls["b2"] + STATS_PATH}, b""))
    urls.update(b=b2.url, c=c.url, b2=b2.url)
    error = raised(lambda: connect(a2.url).fetch(TOPIC), TransientMetadataError)
    assert f"redirect loop between {c.url}{STATS_PATH} and {b2.url}{STATS_PATH}" in str(error)
    assert (len(a2.seen), len(b2.seen), len(c.seen)) == (1, 1, 1)
    counter = itertools.count()
    hops = serve(lambda seen: (307, {"Location": f"{STATS_PATH}?hop={next(counter)}"}, b""))
    error = raised(lambda: connect(hops.url).fetch(TOPIC), TransientMetadataError)
    assert "more than 5 redirects" in str(error) and len(hops.seen) == 6


@pytest.mark.parametrize(
    "reason",
    [
        "Topic persistent://acme/orders/invoices not found",
        "Topic not found",
        "Topic does not exist",
        "Namespace does not exist",
    ],
)
def test_404_from_pulsar_means_the_topic_is_gone(
    serve: Serve, connect: Connect, reason: str
) -> None:
    broker = serve(lambda seen: pulsar_error(404, reason))
    found = connect(broker.url).fetch(TOPIC)
    assert (found.exists, found.ledger_ids, found.fetched_at) == (False, frozenset(), NOW)
    assert found.topic == TOPIC


def _locator(*ledger_ids: int) -> bytes:
    """A SchemaLocator as Pulsar's BookkeeperSchemaStorage writes it, built here."""
    locator = SchemaLocator()
    for version, ledger_id in enumerate(ledger_ids):
        entry = locator.index.add(version=version, hash=b"h")
        entry.position.ledgerId, entry.position.entryId = ledger_id, 0
    locator.info.CopyFrom(locator.index[-1])
    return locator.SerializeToString()


@pytest.mark.parametrize(
    ("local", "schema_znode"),
    [
        ("invoices", "invoices"),
        ("invoices-partition-3", "invoices"),
        ("invoices-partition-03", "invoices-partition-03"),  # not a partition in Java
        ("a b:c%d", "a+b%3Ac%25d"),
    ],
)
def test_a_topic_the_broker_does_not_know_keeps_its_schema_ledgers(
    serve: Serve, connect: Connect, schemas: SqliteMetadataStore, local: str, schema_znode: str
) -> None:
    schemas.create(f"/schemas/acme/orders/{schema_znode}", _locator(31, 32))
    broker = serve(lambda seen: pulsar_error(404, "Topic not found"))
    found = connect(broker.url).fetch(TopicName.parse(f"persistent://acme/orders/{local}"))
    assert (found.exists, found.ledger_ids) == (False, frozenset({31, 32}))


def test_an_unreadable_schema_of_an_unknown_topic_is_unknown(
    serve: Serve, connect: Connect, schemas: SqliteMetadataStore
) -> None:
    schemas.create("/schemas/acme/orders/invoices", b"\x0a\xff\xff")
    broker = serve(lambda seen: pulsar_error(404, "Topic not found"))
    raised(lambda: connect(broker.url).fetch(TOPIC), DecodeError)


def test_without_a_metadata_store_an_unknown_topic_is_unknown(
    serve: Serve, connect: Connect
) -> None:
    broker = serve(lambda seen: pulsar_error(404, "Topic not found"))
    error = raised(lambda: connect(broker.url, schemas=None).fetch(TOPIC), MetadataError)
    assert "no metadata store" in str(error)


def test_a_bare_404_is_not_a_deleted_topic(serve: Serve, connect: Connect) -> None:
    html = b"<html><body><h2>HTTP ERROR 404 Not Found</h2></body></html>"
    broker = serve(lambda seen: (404, {"Content-Type": "text/html"}, html))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert str(error).endswith("unexpected HTTP 404: ")  # no reason to show


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_not_transient(serve: Serve, connect: Connect, status: int) -> None:
    echo = f"token {TOKEN} is expired"  # even an echoing server must not leak it
    broker = serve(lambda seen: pulsar_error(status, echo))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert "authentication/authorization failed" in str(error)


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_are_transient(serve: Serve, connect: Connect, status: int) -> None:
    broker = serve(lambda seen: pulsar_error(status, "Failed to load the managed ledger"))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), TransientMetadataError)
    reason = "Failed to load the managed ledger"
    assert str(error) == f"{broker.url}{STATS_PATH}: HTTP {status}: {reason}"


def test_other_statuses_are_metadata_errors(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: pulsar_error(412, "Topic name is not valid"))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert str(error) == f"{broker.url}{STATS_PATH}: unexpected HTTP 412: Topic name is not valid"


def test_refused_connection_is_transient(connect: Connect) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    error = raised(lambda: connect(url).fetch(TOPIC), TransientMetadataError)
    assert str(error).startswith(f"GET {url}{STATS_PATH}: ConnectError: ")


def test_a_slow_broker_times_out(serve: Serve, connect: Connect) -> None:
    release = threading.Event()
    broker = serve(lambda seen: (release.wait(10), reply(200, stats()))[1])
    try:
        adapter = connect(broker.url, timeout_seconds=0.3)
        error = raised(lambda: adapter.fetch(TOPIC), TransientMetadataError)
        assert str(error) == f"GET {broker.url}{STATS_PATH}: timed out (0.3s)"
    finally:
        release.set()


STATS = "internalStats of persistent://acme/orders/invoices"
NOT_AN_INTEGER = "missing or not an integer"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "malformed JSON: "),
        (b"[]", f"{STATS}: expected a JSON dict, got list"),
        (stats(ledgers=None), f"{STATS}: ledgers: expected a JSON list, got NoneType"),
        (stats(ledgers=["101"]), f"{STATS}: ledgers: expected a JSON dict, got str"),
        (stats(ledgers=[{"ledgerId": "101"}]), f"{STATS}: ledgers: 'ledgerId' {NOT_AN_INTEGER}"),
        (stats(cursors=None), f"{STATS}: cursors: expected a JSON dict, got NoneType"),
        (
            stats(cursors={"billing": {"cursorLedger": True}}),
            f"{STATS}: cursors: 'cursorLedger' {NOT_AN_INTEGER}",
        ),
        (stats(schemaLedgers=None), f"{STATS}: schemaLedgers: expected a JSON list, got NoneType"),
        (
            stats(schemaLedgers=[{"ledgerId": None}]),
            f"{STATS}: schemaLedgers: 'ledgerId' {NOT_AN_INTEGER}",
        ),
        (
            stats(compactedLedger=None),
            f"{STATS}: compactedLedger: expected a JSON dict, got NoneType",
        ),
    ],
)
def test_malformed_answers_are_decode_errors(
    serve: Serve, connect: Connect, body: bytes | dict[str, Any], message: str
) -> None:
    """Named by where in the answer they are: which broker field to look at."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    broker = serve(lambda seen: (200, {"Content-Type": "application/json"}, content))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), DecodeError)
    assert message in str(error)


@pytest.mark.parametrize("last", ["118:199", "0:5", "7:-1"])
def test_no_ledgers_beside_a_written_ledger_is_the_broker_race(
    serve: Serve, connect: Connect, last: str
) -> None:
    broker = serve(lambda seen: reply(200, stats(ledgers=[], lastConfirmedEntry=last)))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), TransientMetadataError)
    assert str(error) == f"{STATS}: no ledgers although {last} was written"


@pytest.mark.parametrize("last", ["-1:-1", None])
def test_a_topic_that_never_had_a_ledger_has_none(
    serve: Serve, connect: Connect, last: str | None
) -> None:
    body = stats(ledgers=[], cursors={}, schemaLedgers=[], lastConfirmedEntry=last)
    found = connect(serve(lambda seen: reply(200, body)).url).fetch(TOPIC)
    assert (found.exists, found.ledger_ids) == (True, frozenset())


def test_ledger_zero_is_a_ledger(serve: Serve, connect: Connect) -> None:
    """BookKeeper's first ledger id is 0; only -1 stands for "no ledger"."""
    for field, zero in [
        ("ledgers", [{"ledgerId": 0, "entries": 5, "size": 50, "offloaded": False}]),
        ("cursors", {"billing": {"cursorLedger": 0}}),
        ("schemaLedgers", [{"ledgerId": 0}]),
        ("compactedLedger", {"ledgerId": 0}),
    ]:
        body = stats(**{field: zero})
        found = connect(serve(lambda seen, body=body: reply(200, body)).url).fetch(TOPIC)
        assert 0 in found.ledger_ids, field


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    server: ssl.SSLContext


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ledger-janitor test CA")])
    ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    usage = dict.fromkeys(
        ["content_commitment", "key_encipherment", "data_encipherment", "key_agreement"], False
    )
    hour = datetime.timedelta(hours=1)

    def certificate(subject: x509.Name, public_key: Any) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .issuer_name(ca_name)
            .subject_name(subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - hour)
            .not_valid_after(now + hour)
        )

    ca = (
        certificate(ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
                **usage,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    broker_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broker")])
    loopback = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
    leaf = (
        certificate(broker_name, key.public_key())
        .add_extension(x509.SubjectAlternativeName([loopback]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (directory / "ca.pem").write_bytes(ca.public_bytes(pem))
    (directory / "broker.pem").write_bytes(
        leaf.public_bytes(pem)
        + key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(directory / "broker.pem")
    return Pki(directory / "ca.pem", server)


def test_https_with_a_trusted_ca(serve: Serve, connect: Connect, pki: Pki) -> None:
    broker = serve(lambda seen: reply(200, stats()), tls=pki.server)
    adapter = connect(broker.url, tls_trust_certs_file=str(pki.ca_file))
    assert adapter.fetch(TOPIC).ledger_ids == RECORDED_IDS


def test_https_untrusted_is_a_configuration_failure(
    serve: Serve, connect: Connect, pki: Pki
) -> None:
    broker = serve(lambda seen: reply(200, stats()), tls=pki.server)
    # Not transient: retrying cannot make the certificate trusted.
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert "certificate verification failed" in str(error)


def test_https_insecure_mode(serve: Serve, connect: Connect, pki: Pki) -> None:
    broker = serve(lambda seen: reply(200, stats()), tls=pki.server)
    assert connect(broker.url, tls_allow_insecure=True).fetch(TOPIC).exists


def test_https_never_redirects_to_plain_http(serve: Serve, connect: Connect, pki: Pki) -> None:
    plain = serve(lambda seen: reply(200, stats()))
    front = serve(lambda seen: (307, {"Location": plain.url + STATS_PATH}, b""), tls=pki.server)
    adapter = connect(front.url, tls_trust_certs_file=str(pki.ca_file))
    error = raised(lambda: adapter.fetch(TOPIC), MetadataError)
    assert f"refusing redirect from {front.url}{STATS_PATH} to {plain.url}" in str(error)
    assert plain.seen == []


def test_plain_http_may_redirect_to_https(serve: Serve, connect: Connect, pki: Pki) -> None:
    owner = serve(lambda seen: reply(200, stats()), tls=pki.server)
    front = serve(lambda seen: (307, {"Location": owner.url + STATS_PATH}, b""))
    adapter = connect(front.url, tls_trust_certs_file=str(pki.ca_file))
    assert adapter.fetch(TOPIC).ledger_ids == RECORDED_IDS
    assert owner.seen == [Seen(STATS_PATH, f"Bearer {TOKEN}")]


def test_token_from_a_file_and_secrecy(serve: Serve, connect: Connect) -> None:
    broker = serve(
        lambda seen: (
            reply(200, stats())
            if seen.authorization == f"Bearer {TOKEN}"
            else pulsar_error(401, "no")
        )
    )
    adapter = connect(broker.url, token=TOKEN + "\n")  # token files end with a newline
    assert adapter.fetch(TOPIC).exists
    assert TOKEN not in repr(adapter) and "<set>" in repr(adapter)
    assert "token=None" in repr(connect(broker.url, token=None))


@pytest.mark.parametrize("status", [401, 403])
def test_a_token_echoed_in_a_reason_is_masked(serve: Serve, connect: Connect, status: int) -> None:
    broker = serve(lambda seen: pulsar_error(status, f"token {TOKEN} is expired"))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert "token <token> is expired" in str(error)


def test_without_a_token_a_reason_is_shown_as_given(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: pulsar_error(503, "Failed to load the managed ledger"))
    error = raised(lambda: connect(broker.url, token=None).fetch(TOPIC), TransientMetadataError)
    assert str(error).endswith(": HTTP 503: Failed to load the managed ledger")


def test_a_long_reason_is_cut_at_300_characters(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: pulsar_error(500, "x" * 1000))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), TransientMetadataError)
    assert str(error).endswith(": HTTP 500: " + "x" * 300)


@pytest.mark.parametrize(
    "body", [[], "Topic not found", {"reason": 404}, {"error": "Topic not found"}]
)
def test_a_404_without_a_pulsar_reason_is_not_a_deleted_topic(
    serve: Serve, connect: Connect, body: object
) -> None:
    broker = serve(lambda seen: reply(404, body))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert str(error).endswith("unexpected HTTP 404: ")


def test_a_redirect_without_a_location_is_an_error(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: (307, {}, b""))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert str(error) == f"HTTP 307 without Location from {broker.url}{STATS_PATH}"


def test_redirects_are_followed_by_hand_even_on_a_client_that_follows_them(
    serve: Serve, connect: Connect
) -> None:
    """httpx would drop the token on the way to another broker; ours keeps it."""
    owner = serve(
        lambda seen: (
            reply(200, stats())
            if seen.authorization == f"Bearer {TOKEN}"
            else pulsar_error(401, "no")
        )
    )
    front = serve(lambda seen: (307, {"Location": owner.url + STATS_PATH}, b""))
    with httpx.Client(follow_redirects=True, timeout=2) as client:
        assert connect(front.url, client=client).fetch(TOPIC).ledger_ids == RECORDED_IDS


def test_proxy_settings_in_the_environment_are_ignored(
    serve: Serve, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stray HTTP(S)_PROXY must not reroute admin calls, and the token, through a proxy
    (here one that would even answer "topic not found")."""
    proxy = serve(lambda seen: pulsar_error(404, "Topic not found"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    broker = serve(lambda seen: reply(200, stats()))
    assert connect(broker.url).fetch(TOPIC).ledger_ids == RECORDED_IDS
    assert proxy.seen == []


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("ftp://127.0.0.1:1", {}),
        ("http://[::1", {}),
        ("http://admin:pw@127.0.0.1:1", {}),
        ("http://127.0.0.1:1", {"token": "abc\ndef"}),
        ("https://127.0.0.1:1", {"tls_trust_certs_file": "/nonexistent/ca.pem"}),
    ],
)
def test_bad_settings_are_refused(url: str, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        AdminHttp(url, **options)
    assert "abc" not in str(info.value)
