"""What may be done with a pending deletion, as pure functions of what is known.

A `Verdict` says only what the decision is; what was then done is an `Outcome` (outcome.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum

from core.clock import EpochSeconds
from core.errors import DecodeError
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import LedgerRecord, TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.offload_context import java_uuid


class Verdict(Enum):
    SAFE_TO_DELETE = "safe_to_delete"
    NOT_YET = "not_yet"  # referenced, unknown or too young: check again later
    REFUSED = "refused"  # never on this message (not its namespace, not its ledger): archive it


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    # The ledger is known to be referenced (not merely unknown or stale): retrying soon
    # cannot help, which is what an archive drain wants to know.
    referenced: bool = False
    # SAFE_TO_DELETE only once the ledger proves old enough (`decide_age`): the snapshot alone
    # cannot vouch for it. Old enough *when that snapshot was read* (`snapshot_at`), not now:
    # a cached snapshot may predate the ledger's recording.
    needs_age: bool = False
    snapshot_at: EpochSeconds | None = None


@dataclass(frozen=True)
class SafetyMargins:
    """The configured bounds the rules below rely on (seconds)."""

    send_delay: float = 60.0  # sendDelaySecondsOfTwoPhaseDeletion: a floor for every delay
    clock_skew: float = 10.0  # clockSkewAllowanceSecondsOfTwoPhaseDeletion
    min_ledger_age: float = 3600.0  # minLedgerAgeSecondsOfTwoPhaseDeletion


def decide_in_use(
    info: PendingDeleteLedgerInfo, snapshot: TopicLedgers, due: EpochSeconds
) -> Decision:
    """Whether `snapshot` lets the ledger go, for a message that became due at `due`.

    Phase one sends the message before the metadata that stops referencing the ledger is
    committed. So:

    1. A snapshot that references the ledger means reconsume later.
    2. A snapshot read before the message was due may predate that commit, or predate a
       topic's re-creation, whatever it says: nothing is deleted on it (an absent or empty
       snapshot is no exception).
    3. Read after the due time, the snapshot vouches for a ledger id at or below the
       largest id it references: Pulsar only ever adds ledgers it has just created, so an
       older id it no longer lists is gone for good.
    4. For any other ledger (the topic is absent, references nothing, or only older
       ledgers), the ledger may be one that is being created and not yet recorded. It is
       deletable only with `needs_age`: see `decide_age`. Unless the sender said not to
       check (`checkLedgerStillInUse=false`), which the caller pairs with a snapshot read
       now.
    """
    ledger_id, topic = info.ledger_id, info.topic_name
    if _referenced(info, snapshot):
        return Decision(
            Verdict.NOT_YET, f"ledger {ledger_id} is still referenced by {topic}", referenced=True
        )
    if snapshot.fetched_at < due:
        return Decision(
            Verdict.NOT_YET, f"in-use snapshot of {topic} predates the message's due time"
        )
    largest = snapshot.largest
    if not info.check_ledger_still_in_use or (largest is not None and ledger_id <= largest):
        return Decision(
            Verdict.SAFE_TO_DELETE, f"ledger {ledger_id} is no longer referenced by {topic}"
        )
    if not snapshot.exists:
        why = f"topic {topic} has no managed ledger"
    else:
        why = f"ledger {ledger_id} is newer than every ledger {topic} references ({largest})"
    return Decision(Verdict.SAFE_TO_DELETE, why, needs_age=True, snapshot_at=snapshot.fetched_at)


def _referenced(info: PendingDeleteLedgerInfo, snapshot: TopicLedgers) -> bool:
    """Whether the snapshot references what the message would delete.

    For an offloaded copy that is the ledger *and* its offload UUID: Pulsar records a UUID in
    the ledger's offload context before writing any object under it
    (ManagedLedgerImpl.prepareLedgerInfoForOffloaded) and never records an old UUID again, so
    the objects of a UUID the ledger no longer names are a failed or superseded offload's
    leftovers (apache/pulsar#9962, #16687), which no reader will ever open. When the UUID
    cannot be read, or the source does not know the UUIDs, the ledger id alone decides.
    """
    if info.ledger_id not in snapshot.ledger_ids:
        return False
    if info.ledger_type is not LedgerType.OFFLOAD_LEDGER:
        return True
    uuid = _offload_uuid(info)
    return uuid is None or snapshot.offload_referenced(info.ledger_id, uuid)


def _offload_uuid(info: PendingDeleteLedgerInfo) -> str | None:
    try:
        context = info.ledger_info
    except DecodeError:
        return None
    if context is None or not context.HasField("offloadContext"):
        return None
    ctx = context.offloadContext
    if not (ctx.HasField("uidMsb") and ctx.HasField("uidLsb")):
        return None
    return java_uuid(ctx.uidMsb, ctx.uidLsb)


def decide_age(
    ledger_id: int, created_ms: int | None, snapshot_at: EpochSeconds, margins: SafetyMargins
) -> Decision:
    """The grace rule for a ledger no snapshot can vouch for.

    Why it is safe: Pulsar records a ledger in its metadata right after creating it (the
    managed ledger's list, a cursor's `cursorsLedgerId`, a schema locator), or deletes it
    when recording fails; it never adds an older ledger later. The caller's snapshot was
    read after the message became due and does not reference the ledger. If the ledger's
    metadata znode was created more than `min_ledger_age` before that snapshot was read
    (`snapshot_at`, plus the clock-skew allowance, since the store's clock is not ours), any
    recording that was going to happen happened before the snapshot, which would have shown
    it. The age is taken at the snapshot, never now: a snapshot served from the cache may
    have been read while the ledger was young and not yet recorded, and the ledger recorded
    since. An unknown age is not old.
    """
    if created_ms is None:
        return Decision(Verdict.NOT_YET, f"the age of ledger {ledger_id} is unknown")
    age = snapshot_at - created_ms / 1000.0 - margins.clock_skew
    if age < margins.min_ledger_age:
        return Decision(
            Verdict.NOT_YET,
            f"ledger {ledger_id} is too young ({max(age, 0.0):.0f}s of "
            f"{margins.min_ledger_age:.0f}s) to delete on a snapshot that cannot vouch for it",
        )
    return Decision(
        Verdict.SAFE_TO_DELETE, f"ledger {ledger_id} is unreferenced and {age:.0f}s old"
    )


def check_namespace(info: PendingDeleteLedgerInfo, arrived_in: NamespaceName) -> Decision | None:
    """A deletion topic may only name topics of its own namespace: tenants stay isolated.
    A refusal, or None when it does."""
    if info.topic_name.namespace != arrived_in:
        return Decision(
            Verdict.REFUSED,
            f"topic {info.topic_name} is outside namespace {arrived_in} of the deletion topic",
        )
    return None


def check_ownership(info: PendingDeleteLedgerInfo, record: LedgerRecord) -> Decision | None:
    """The ledger's own custom metadata, written by Pulsar, must name the message's topic.
    A refusal, or None when it does."""
    for key, value in _expected_items(info.topic_name, info.ledger_component):
        actual = record.metadata_text(key)
        if actual != value:
            return Decision(
                Verdict.REFUSED,
                f"ledger {info.ledger_id} metadata {key}={actual!r}, expected {value!r}",
            )
    is_cursor = record.metadata_text("pulsar/cursor") is not None
    if is_cursor != (info.ledger_component is LedgerComponent.MANAGED_CURSOR):
        return Decision(
            Verdict.REFUSED,
            f"ledger {info.ledger_id} is {'a' if is_cursor else 'not a'} cursor ledger, "
            f"but the message says {info.ledger_component.value}",
        )
    return None


def expected_metadata(topic: TopicName, component: LedgerComponent) -> dict[str, str]:
    return dict(_expected_items(topic, component))


@functools.lru_cache(maxsize=4096)
def _expected_items(topic: TopicName, component: LedgerComponent) -> tuple[tuple[str, str], ...]:
    # Cached, and immutable so: every message checks, and the names are worked out by encoding.
    if component is LedgerComponent.SCHEMA_STORAGE:
        return (
            ("application", "pulsar"),
            ("component", "schema"),
            ("pulsar/schemaId", topic.schema_id),
        )
    return (
        ("application", "pulsar"),
        ("component", "managed-ledger"),
        ("pulsar/managed-ledger", topic.managed_ledger_name),
    )


def pulsar_custom_metadata(
    topic: TopicName, component: LedgerComponent, cursor: str = "sub"
) -> dict[str, bytes]:
    """The custom metadata Pulsar writes on a ledger of this component (fixtures, the demo)."""
    expected = expected_metadata(topic, component)
    if component is LedgerComponent.MANAGED_CURSOR:
        expected["pulsar/cursor"] = cursor
    return {key: value.encode() for key, value in expected.items()}
