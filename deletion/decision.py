"""What to do with a pending deletion, as pure functions of what is known."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .message import LedgerComponent, PendingDeleteLedgerInfo
from .ports import LedgerRecord, TopicLedgers
from .topics import NamespaceName, TopicName


class Verdict(Enum):
    DELETE = "delete"
    ALREADY_GONE = "already_gone"
    RECONSUME = "reconsume"
    ARCHIVE = "archive"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    # The ledger is known to be referenced (not merely unknown or stale): retrying soon
    # cannot help, which is what an archive drain wants to know.
    referenced: bool = False


def decide_in_use(info: PendingDeleteLedgerInfo, snapshot: TopicLedgers) -> Decision:
    """The PIP-186 rule: referenced or a stale snapshot means reconsume later.

    A ledger id above the largest the snapshot knows may belong to a ledger created after
    the snapshot was taken, so the snapshot cannot vouch for it.
    """
    ledger_id = info.ledger_id
    if ledger_id in snapshot.ledger_ids:
        return Decision(
            Verdict.RECONSUME,
            f"ledger {ledger_id} is still referenced by {info.topic_name}",
            referenced=True,
        )
    if not snapshot.exists:
        return Decision(Verdict.DELETE, f"topic {info.topic_name} has no managed ledger")
    largest = snapshot.largest
    if info.check_ledger_still_in_use and (largest is None or ledger_id > largest):
        return Decision(
            Verdict.RECONSUME,
            f"in-use snapshot of {info.topic_name} is stale (largest known ledger {largest})",
        )
    return Decision(
        Verdict.DELETE, f"ledger {ledger_id} is no longer referenced by {info.topic_name}"
    )


def check_namespace(info: PendingDeleteLedgerInfo, arrived_in: NamespaceName) -> Decision | None:
    """A deletion topic may only name topics of its own namespace: tenants stay isolated."""
    if info.topic_name.namespace != arrived_in:
        return Decision(
            Verdict.ARCHIVE,
            f"topic {info.topic_name} is outside namespace {arrived_in} of the deletion topic",
        )
    return None


def check_ownership(info: PendingDeleteLedgerInfo, record: LedgerRecord) -> Decision:
    """The ledger's own custom metadata, written by Pulsar, must name the message's topic."""
    expected = expected_metadata(info.topic_name, info.ledger_component)
    for key, value in expected.items():
        actual = record.metadata_text(key)
        if actual != value:
            return Decision(
                Verdict.ARCHIVE,
                f"ledger {info.ledger_id} metadata {key}={actual!r}, expected {value!r}",
            )
    is_cursor = record.metadata_text("pulsar/cursor") is not None
    if is_cursor != (info.ledger_component is LedgerComponent.MANAGED_CURSOR):
        return Decision(
            Verdict.ARCHIVE,
            f"ledger {info.ledger_id} is {'a' if is_cursor else 'not a'} cursor ledger, "
            f"but the message says {info.ledger_component.value}",
        )
    return Decision(Verdict.DELETE, f"ledger {info.ledger_id} belongs to {info.topic_name}")


def expected_metadata(topic: TopicName, component: LedgerComponent) -> dict[str, str]:
    if component is LedgerComponent.SCHEMA_STORAGE:
        return {"application": "pulsar", "component": "schema", "pulsar/schemaId": topic.schema_id}
    return {
        "application": "pulsar",
        "component": "managed-ledger",
        "pulsar/managed-ledger": topic.managed_ledger_name,
    }


def pulsar_custom_metadata(
    topic: TopicName, component: LedgerComponent, cursor: str = "sub"
) -> dict[str, bytes]:
    """The custom metadata Pulsar writes on a ledger of this component (fixtures, the demo)."""
    expected = expected_metadata(topic, component)
    if component is LedgerComponent.MANAGED_CURSOR:
        expected["pulsar/cursor"] = cursor
    return {key: value.encode() for key, value in expected.items()}
