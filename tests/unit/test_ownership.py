"""The checks that refuse a message outright: namespace isolation and ledger ownership."""

from __future__ import annotations

import pytest

from deletion.domain.decision import (
    Verdict,
    check_namespace,
    check_ownership,
    pulsar_custom_metadata,
)
from deletion.domain.message import LedgerComponent
from deletion.domain.ports import LedgerRecord
from deletion.domain.topics import NamespaceName, TopicName
from tests.unit.test_decision import NS, TOPIC, message

# --- check_namespace -----------------------------------------------------------------------


def test_message_of_the_deletion_topics_namespace_passes() -> None:
    assert check_namespace(message(1), NS) is None


@pytest.mark.parametrize(
    "arrived_in",
    [NamespaceName("t", "other"), NamespaceName("other", "ns"), NamespaceName("ns", "t")],
)
def test_message_naming_another_namespace_is_archived(arrived_in: NamespaceName) -> None:
    decision = check_namespace(message(1), arrived_in)
    assert decision is not None
    assert decision.verdict is Verdict.REFUSED


# --- check_ownership -----------------------------------------------------------------------


def record(metadata: dict[str, bytes], ledger_id: int = 1) -> LedgerRecord:
    return LedgerRecord(ledger_id, metadata, ctime_ms=1, version=0)


@pytest.mark.parametrize("component", list(LedgerComponent))
def test_matching_pulsar_metadata_is_owned(component: LedgerComponent) -> None:
    metadata = pulsar_custom_metadata(TOPIC, component)
    assert check_ownership(message(1, component), record(metadata)) is None


def test_pulsar_custom_metadata_is_what_pulsar_writes() -> None:
    # LedgerMetadataUtils.buildBaseManagedLedgerMetadata / ...ForCursor / ...ForSchema.
    assert pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_LEDGER) == {
        "application": b"pulsar",
        "component": b"managed-ledger",
        "pulsar/managed-ledger": b"t/ns/persistent/orders-partition-1",
    }
    assert pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_CURSOR, "sub-1") == {
        "application": b"pulsar",
        "component": b"managed-ledger",
        "pulsar/managed-ledger": b"t/ns/persistent/orders-partition-1",
        "pulsar/cursor": b"sub-1",
    }
    assert pulsar_custom_metadata(TOPIC, LedgerComponent.SCHEMA_STORAGE) == {
        "application": b"pulsar",
        "component": b"schema",
        "pulsar/schemaId": b"t/ns/orders",
    }


def test_ownership_uses_encoded_names() -> None:
    topic = TopicName(NS, "a b:c%d")
    owned = record(pulsar_custom_metadata(topic, LedgerComponent.MANAGED_LEDGER))
    assert owned.custom_metadata["pulsar/managed-ledger"] == b"t/ns/persistent/a+b%3Ac%25d"
    assert check_ownership(message(1, topic=topic), owned) is None
    raw = dict(owned.custom_metadata, **{"pulsar/managed-ledger": b"t/ns/persistent/a b:c%d"})
    refused = check_ownership(message(1, topic=topic), record(raw))
    assert refused is not None and refused.verdict is Verdict.REFUSED


def test_schema_ledger_of_a_partition_belongs_to_the_base_topic() -> None:
    base = TopicName(NS, "orders")
    metadata = pulsar_custom_metadata(base, LedgerComponent.SCHEMA_STORAGE)
    info = message(1, LedgerComponent.SCHEMA_STORAGE, topic=TOPIC)
    assert check_ownership(info, record(metadata)) is None


def _with(component: LedgerComponent, changes: dict[str, bytes | None]) -> dict[str, bytes]:
    """Pulsar's metadata for TOPIC with some keys changed (None removes the key)."""
    metadata = pulsar_custom_metadata(TOPIC, component)
    for key, value in changes.items():
        if value is None:
            metadata.pop(key, None)
        else:
            metadata[key] = value
    return metadata


OTHER_TOPIC = TopicName(NamespaceName("victim", "ns"), "orders-partition-1")


@pytest.mark.parametrize(
    ("component", "metadata"),
    [
        (LedgerComponent.MANAGED_LEDGER, {}),
        (LedgerComponent.MANAGED_CURSOR, {}),
        (LedgerComponent.SCHEMA_STORAGE, {}),
        (
            LedgerComponent.MANAGED_LEDGER,
            _with(LedgerComponent.MANAGED_LEDGER, {"application": None}),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            _with(LedgerComponent.MANAGED_LEDGER, {"application": b"bk"}),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            _with(LedgerComponent.MANAGED_LEDGER, {"component": b"schema"}),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            _with(LedgerComponent.MANAGED_LEDGER, {"pulsar/managed-ledger": None}),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            pulsar_custom_metadata(OTHER_TOPIC, LedgerComponent.MANAGED_LEDGER),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            pulsar_custom_metadata(
                TopicName(NS, "orders-partition-2"), LedgerComponent.MANAGED_LEDGER
            ),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            pulsar_custom_metadata(TopicName(NS, "orders"), LedgerComponent.MANAGED_LEDGER),
        ),
        (
            LedgerComponent.MANAGED_CURSOR,
            pulsar_custom_metadata(OTHER_TOPIC, LedgerComponent.MANAGED_CURSOR),
        ),
        (
            LedgerComponent.SCHEMA_STORAGE,
            pulsar_custom_metadata(OTHER_TOPIC, LedgerComponent.SCHEMA_STORAGE),
        ),
        (
            LedgerComponent.SCHEMA_STORAGE,
            pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_LEDGER),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            pulsar_custom_metadata(TOPIC, LedgerComponent.SCHEMA_STORAGE),
        ),
        (
            LedgerComponent.MANAGED_LEDGER,
            _with(LedgerComponent.MANAGED_LEDGER, {"application": b"\xffpulsar"}),
        ),
    ],
    ids=[
        "no-metadata-ml",
        "no-metadata-cursor",
        "no-metadata-schema",
        "no-application",
        "other-application",
        "other-component",
        "no-ml-name",
        "other-tenant",
        "other-partition",
        "base-instead-of-partition",
        "cursor-of-other-tenant",
        "schema-of-other-tenant",
        "schema-message-for-ml-ledger",
        "ml-message-for-schema-ledger",
        "undecodable-value",
    ],
)
def test_mismatched_ownership_is_archived(
    component: LedgerComponent, metadata: dict[str, bytes]
) -> None:
    decision = check_ownership(message(1, component), record(metadata))
    assert decision is not None and decision.verdict is Verdict.REFUSED
    # The archive reason names the ledger, and the key that does not match.
    assert decision.reason.startswith("ledger 1 ")


def test_cursor_ledger_named_as_managed_ledger_is_archived() -> None:
    cursor_ledger = record(pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_CURSOR))
    decision = check_ownership(message(1, LedgerComponent.MANAGED_LEDGER), cursor_ledger)
    assert decision is not None and decision.verdict is Verdict.REFUSED
    assert decision.reason == "ledger 1 is a cursor ledger, but the message says MANAGED_LEDGER"


def test_data_ledger_named_as_cursor_is_archived() -> None:
    data_ledger = record(pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_LEDGER))
    decision = check_ownership(message(1, LedgerComponent.MANAGED_CURSOR), data_ledger)
    assert decision is not None and decision.verdict is Verdict.REFUSED
    assert decision.reason == "ledger 1 is not a cursor ledger, but the message says MANAGED_CURSOR"
