"""AdminApiInUseLedgers against loopback servers serving recorded broker JSON: what a snapshot
holds (partitions, compacted ledgers, schemas of unknown topics) and answers it refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.clock import EpochSeconds
from core.errors import (
    DecodeError,
    LayoutError,
    MetadataError,
    TransientMetadataError,
)
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain.topics import TopicName
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator
from tests.integration.admin_api_rig import (
    NOW,
    RECORDED,
    RECORDED_IDS,
    STATS_PATH,
    TOKEN,
    TOPIC,
    Connect,
    Reply,
    Seen,
    Serve,
    connect,
    pulsar_error,
    raised,
    reply,
    schemas,
    serve,
    stats,
)
from transport.admin_http import AdminHttp

__all__ = ["connect", "schemas", "serve"]  # the fixtures


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


@pytest.mark.parametrize(
    "reason",
    [
        "Topic persistent://acme/orders/invoices not found",
        "Topic not found",
        "Topic does not exist",
    ],
)
def test_404_from_pulsar_means_the_topic_is_gone(
    serve: Serve, connect: Connect, reason: str
) -> None:
    broker = serve(lambda seen: pulsar_error(404, reason))
    found = connect(broker.url).fetch(TOPIC)
    assert (found.exists, found.ledger_ids, found.fetched_at) == (False, frozenset(), NOW)
    assert found.topic == TOPIC


@pytest.mark.parametrize("reason", ["Namespace does not exist", "Tenant does not exist"])
def test_a_broker_that_knows_no_such_namespace_is_unknown(
    serve: Serve, connect: Connect, reason: str
) -> None:
    """The metadata store holds the namespace (the fixture's): a broker without it is
    another cluster's, or one deleting it; either way its topics are not known deleted."""
    broker = serve(lambda seen: pulsar_error(404, reason))
    assert reason in str(raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError))


def test_a_topic_the_broker_does_not_know_is_unknown_where_the_store_lacks_its_namespace(
    serve: Serve, connect: Connect, schemas: SqliteMetadataStore
) -> None:
    """No schema locator proves nothing in a store without the topic's namespace (a wrong
    metadataStoreUrl beside the right webServiceUrl): unknown, not "no schema ledgers"."""
    stranger = TopicName.parse("persistent://elsewhere/ns/invoices")
    broker = serve(lambda seen: pulsar_error(404, "Topic not found"))
    error = raised(lambda: connect(broker.url).fetch(stranger), LayoutError)
    assert "no /admin/policies/elsewhere/ns" in str(error)


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


def test_the_creators_are_what_the_managed_ledger_and_each_cursor_record(
    serve: Serve, connect: Connect
) -> None:
    """The newest data ledger (offloaded ones count) and every cursor's ledger, a cursor
    with none yet (-1) included: it exists, and may be creating its first."""
    broker = serve(lambda seen: reply(200, stats()))
    creators = connect(broker.url).fetch(TOPIC).creators
    assert creators is not None
    assert creators.newest_data == 118
    assert creators.cursors == {"billing": 115, "idle+sub": -1, "pulsar.dedup": 120}


def test_the_snapshot_time_is_taken_before_the_broker_is_asked(
    serve: Serve, schemas: SqliteMetadataStore
) -> None:
    """fetched_at may only be earlier than what the snapshot shows, never later: a time
    taken after the answer would let a reference made meanwhile go unseen."""
    ticks = iter(range(1000, 2000))

    def answered(seen: Seen) -> Reply:
        next(ticks)  # the broker answers after the clock has moved on
        return reply(200, stats())

    broker = serve(answered)
    http = AdminHttp(broker.url, token=TOKEN, timeout_seconds=2)
    source = AdminApiInUseLedgers(http, clock=lambda: EpochSeconds(next(ticks)), schemas=schemas)
    try:
        assert source.fetch(TOPIC).fetched_at == EpochSeconds(1000)
    finally:
        source.close()
