"""Topic names as Pulsar spells and encodes them, and the per-namespace deletion topics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import DecodeError
from deletion.domain.topics import (
    NamespaceName,
    TopicName,
    java_url_decode,
    java_url_encode,
    managed_ledger_path,
    namespace_of_deletion_topic,
    schema_path,
)

NS = NamespaceName("t", "ns")


def java_url_encoder_reference(text: str) -> str:
    """java.net.URLEncoder.encode(text, UTF_8) as its Javadoc specifies it.

    a-z, A-Z, 0-9 and ".", "-", "*", "_" stay; space becomes "+"; every other character
    becomes the "%XY" (upper-case hex) of each byte of its UTF-8 form.
    """
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char.isascii() and (char.isalnum() or char in ".-*_"):
            out.append(char)
        elif char == " ":
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


# Each vector derived by hand from the URLEncoder rules above.
URL_VECTORS = [
    ("a b", "a+b"),
    ("a:b", "a%3Ab"),  # ':' = 0x3A
    ("x~y", "x%7Ey"),  # '~' = 0x7E: unreserved for RFC 3986, but not for URLEncoder
    ("*._-", "*._-"),
    ("AZaz09", "AZaz09"),
    ("é", "%C3%A9"),  # U+00E9 -> UTF-8 c3 a9
    ("€", "%E2%82%AC"),  # U+20AC -> UTF-8 e2 82 ac
    ("\U0001f600", "%F0%9F%98%80"),  # outside the BMP: one 4-byte UTF-8 sequence
    ("%", "%25"),
    ("+", "%2B"),
    ("/", "%2F"),
    ("a b:c%d", "a+b%3Ac%25d"),
    ("!'()", "%21%27%28%29"),
    ("\n", "%0A"),
    ("=&?#", "%3D%26%3F%23"),
]


@pytest.mark.parametrize(("text", "encoded"), URL_VECTORS)
def test_java_url_encode_vectors(text: str, encoded: str) -> None:
    assert java_url_encode(text) == encoded
    assert java_url_encoder_reference(text) == encoded  # the reference agrees with the hand


@pytest.mark.parametrize(("text", "encoded"), URL_VECTORS)
def test_java_url_decode_inverts_vectors(text: str, encoded: str) -> None:
    assert java_url_decode(encoded) == text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_java_url_encode_matches_reference(text: str) -> None:
    encoded = java_url_encode(text)
    assert encoded == java_url_encoder_reference(text)
    assert java_url_decode(encoded) == text


# --- names and paths -----------------------------------------------------------------------


def test_managed_ledger_name_and_path_encode_the_local_name() -> None:
    topic = TopicName(NamespaceName("public", "default"), "a b:c%d-partition-2")
    assert topic.managed_ledger_name == "public/default/persistent/a+b%3Ac%25d-partition-2"
    assert managed_ledger_path(topic) == (
        "/managed-ledgers/public/default/persistent/a+b%3Ac%25d-partition-2"
    )


def test_schema_id_uses_the_encoded_base_name_without_partition_or_domain() -> None:
    partition = TopicName(NamespaceName("public", "default"), "a b:c%d-partition-2")
    base = TopicName(NamespaceName("public", "default"), "a b:c%d")
    assert partition.schema_id == "public/default/a+b%3Ac%25d"
    assert base.schema_id == partition.schema_id
    assert schema_path(partition) == "/schemas/public/default/a+b%3Ac%25d"
    assert schema_path(base) == schema_path(partition)


def test_zero_padded_suffix_keeps_its_own_schema() -> None:
    """A zero-padded suffix is part of the name, so the schema path keeps it."""
    padded = TopicName(NS, "t-partition-01")
    assert schema_path(padded) == "/schemas/t/ns/t-partition-01"
    assert schema_path(TopicName(NS, "t-partition-1")) == "/schemas/t/ns/t"


def test_plain_names_are_unchanged() -> None:
    topic = TopicName(NS, "orders")
    assert topic.managed_ledger_name == "t/ns/persistent/orders"
    assert topic.schema_id == "t/ns/orders"
    assert topic.full_name == "persistent://t/ns/orders"
    assert str(topic) == "t/ns/orders"


@pytest.mark.parametrize(
    ("local", "base", "index"),
    [
        ("orders-partition-0", "orders", 0),
        ("orders-partition-17", "orders", 17),
        ("a-partition-1-partition-2", "a-partition-1", 2),
        ("orders", "orders", None),
        ("orders-partition-", "orders-partition-", None),
        ("orders-partition-x", "orders-partition-x", None),
        # Java: partition 3 of a blank local name (which TopicName.parse refuses, as the
        # broker does: "Topic local name must not be blank").
        ("-partition-3", "", 3),
        # Java's TopicName.getPartitionIndex: only the canonical digits of an int.
        ("t-partition-01", "t-partition-01", None),
        ("t-partition-00", "t-partition-00", None),
        ("t-partition-007", "t-partition-007", None),
        ("t-partition-+1", "t-partition-+1", None),
        ("t-partition--1", "t-partition--1", None),
        ("t-partition-2147483647", "t", 2147483647),
        ("t-partition-2147483648", "t-partition-2147483648", None),
    ],
)
def test_partition_suffix(local: str, base: str, index: int | None) -> None:
    topic = TopicName(NS, local)
    assert topic.partition_index == index
    assert topic.base == TopicName(NS, base)


def test_deletion_archive_and_retry_topic_names() -> None:
    assert NS.deletion_topic == "persistent://t/ns/__ledger_deletion"
    assert NS.archive_topic == "persistent://t/ns/__ledger_deletion_archive"
    # The Java client's default retry topic: <topic>-<subscription>-RETRY.
    assert NS.retry_topic == "persistent://t/ns/__ledger_deletion-ledger-deletion-worker-RETRY"


@pytest.mark.parametrize(
    "topic",
    [
        "persistent://t/ns/__ledger_deletion",
        "persistent://t/ns/__ledger_deletion-partition-0",
        "persistent://t/ns/__ledger_deletion-partition-3",
        "persistent://t/ns/__ledger_deletion_archive",
        "persistent://t/ns/__ledger_deletion_archive-partition-1",
        "persistent://t/ns/__ledger_deletion-ledger-deletion-worker-RETRY",
        "persistent://t/ns/__ledger_deletion-ledger-deletion-worker-RETRY-partition-2",
        "t/ns/__ledger_deletion-partition-1",
    ],
)
def test_namespace_of_deletion_topic(topic: str) -> None:
    assert namespace_of_deletion_topic(topic) == NS


def test_namespace_of_deletion_topic_uses_the_topics_own_namespace() -> None:
    other = NamespaceName("other-tenant", "ns2")
    assert namespace_of_deletion_topic(other.deletion_topic) == other
    assert namespace_of_deletion_topic(other.retry_topic) == other
    assert namespace_of_deletion_topic(other.archive_topic) == other


@pytest.mark.parametrize(
    "topic",
    [
        "persistent://t/ns/orders",
        "persistent://t/ns/orders-partition-1",
        "persistent://t/ns/__ledger_deletionX",
        "persistent://t/ns/x__ledger_deletion",
        "persistent://t/ns/__ledger_deletion_archiveX",
        "persistent://t/ns/__ledger",
        "non-persistent://t/ns/__ledger_deletion",
        "persistent://t/ns",
    ],
)
def test_namespace_of_deletion_topic_rejects_other_topics(topic: str) -> None:
    with pytest.raises(DecodeError):
        namespace_of_deletion_topic(topic)


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("persistent://t/ns/x", TopicName(NS, "x")),
        ("t/ns/x", TopicName(NS, "x")),
        ("t/ns/a b:c%d", TopicName(NS, "a b:c%d")),
        ("t/ns/..x", TopicName(NS, "..x")),
        ("my-tenant/ns=1:a.b/x", TopicName(NamespaceName("my-tenant", "ns=1:a.b"), "x")),
    ],
)
def test_parse_accepts(text: str, expected: TopicName) -> None:
    assert TopicName.parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "non-persistent://t/ns/x",
        "http://t/ns/x",
        "PERSISTENT://t/ns/x",
        "://t/ns/x",
    ],
)
def test_parse_rejects_other_domains(text: str) -> None:
    with pytest.raises(DecodeError, match="persistent"):
        TopicName.parse(text)


@pytest.mark.parametrize(
    "text", ["", "t", "t/ns", "t/ns/", "/ns/x", "t//x", "persistent://t/ns", "persistent://"]
)
def test_parse_rejects_missing_parts(text: str) -> None:
    with pytest.raises(DecodeError):
        TopicName.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "t/ns/..",
        "t/ns/.",
        "t/ns/a/b",
        "persistent://t/ns/a/b",
        "t/ns/../x",
        "t/../x",
        "../ns/x",
        "t/./x",
        "t/ns/-partition-5",
        "persistent://t/ns/-partition-0",
    ],
)
def test_parse_rejects_path_tricks(text: str) -> None:
    with pytest.raises(DecodeError):
        TopicName.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "t t/ns/x",
        "t$/ns/x",
        "t/n s/x",
        "t/ns#/x",
        "t%2F/ns/x",
        "t\n/ns/x",
        "t/ns\n/x",
        "té/ns/x",
    ],
)
def test_parse_rejects_bad_tenant_and_namespace_chars(text: str) -> None:
    with pytest.raises(DecodeError):
        TopicName.parse(text)


def test_namespace_parse() -> None:
    assert NamespaceName.parse("t/ns") == NS
    assert str(NS) == "t/ns"
    for bad in ("t", "t/ns/x", "/ns", "t/", "t s/ns"):
        with pytest.raises(DecodeError):
            NamespaceName.parse(bad)


@settings(max_examples=200, deadline=None)
@given(
    st.text("abcXYZ019_-=:.", min_size=1, max_size=10).filter(lambda s: s not in (".", "..")),
    st.text(st.characters(blacklist_characters="/"), min_size=1, max_size=30).filter(
        lambda s: s not in (".", "..")
    ),
)
def test_parse_round_trips_both_forms(tenant: str, local: str) -> None:
    topic = TopicName(NamespaceName(tenant, "ns"), local)
    assert TopicName.parse(str(topic)) == topic
    assert TopicName.parse(topic.full_name) == topic
