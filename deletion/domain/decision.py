"""What may be done with a pending deletion, as pure functions of what is known.

A `Verdict` says only what the decision is; what was then done is an `Outcome` (outcome.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from core.clock import EpochSeconds
from core.errors import DecodeError
from deletion.domain import kinds
from deletion.domain.message import LedgerComponent, LedgerKind, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import LedgerRecord, TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.offload_context import java_uuid

CURSOR_KEY = "pulsar/cursor"  # the custom metadata naming a cursor ledger's cursor


class Verdict(Enum):
    SAFE_TO_DELETE = "safe_to_delete"
    NOT_YET = "not_yet"  # referenced, unknown or too young: check again later
    REFUSED = "refused"  # never on this message (not its namespace, not its ledger): archive it


class Decision(NamedTuple):
    """A verdict and why. A named tuple, not a frozen dataclass: one or two are made for every
    message, and a tuple is made in half the time."""

    verdict: Verdict
    reason: str
    # The ledger is known to be referenced (not merely unknown or stale): retrying soon
    # cannot help, which is what an archive drain wants to know.
    referenced: bool = False
    # SAFE_TO_DELETE on a snapshot is never final: the ledger's own record must then show
    # that nothing can still record it (`decide_recordable`), judged at this snapshot.
    snapshot: TopicLedgers | None = None
    # NOT_YET only because the ledger is too young: when the age rule will let it go.
    old_at: EpochSeconds | None = None


@dataclass(frozen=True)
class SafetyMargins:
    """The configured bounds the rules below rely on (seconds)."""

    send_delay: float = 60.0  # sendDelaySecondsOfTwoPhaseDeletion: a floor for every delay
    clock_skew: float = 10.0  # clockSkewAllowanceSecondsOfTwoPhaseDeletion
    min_ledger_age: float = 600.0  # minLedgerAgeSecondsOfTwoPhaseDeletion
    # metadataStoreSessionTimeoutMillis: with the age rule on, how long a (re)connection to
    # the metadata store must have lasted before a snapshot read on it lets a ledger go.
    settle: float = 30.0

    def settle_after(self, since: EpochSeconds) -> EpochSeconds:
        """The earliest snapshot time a connection made at `since` vouches for: its start, and
        with the age rule on, `settle` later (see `decide_recordable`)."""
        return EpochSeconds(since + (self.settle if self.min_ledger_age > 0 else 0.0))


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
    3. Otherwise the snapshot lets the ledger go, but only as far as the snapshot can tell:
       a ledger that is being created is referenced by nothing yet. Whether anything can
       still record it is for `decide_recordable`, on the ledger's own record, whatever the
       ledger's id and whatever `checkLedgerStillInUse` says (which the caller pairs with a
       snapshot read now instead of one read after the due time).
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
    why = f"ledger {ledger_id} is no longer referenced by {topic}"
    return Decision(Verdict.SAFE_TO_DELETE, why, snapshot=snapshot)


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


def decide_recordable(
    info: PendingDeleteLedgerInfo,
    record: LedgerRecord | None,
    snapshot: TopicLedgers,
    margins: SafetyMargins,
) -> Decision:
    """Whether anything can still record a ledger that `snapshot`, read after the message was
    due, does not reference. Deletable only if nothing can.

    Pulsar creates every ledger *before* it records it, and a topic has several creators that
    work independently and at once: the managed ledger rolls over (create, then add to
    `ManagedLedgerInfo`), each cursor switches ledgers (create, write the position, then record
    `cursorsLedgerId`), and a schema put creates, writes and closes a ledger, then updates the
    `SchemaLocator`. So a snapshot that does not reference a ledger proves nothing about one
    being created, whatever its id (a cursor ledger 22 in creation while the managed ledger
    records 23). What does prove it is **the age rule**: the ledger's metadata znode was
    created at least `min_ledger_age`, plus the clock-skew allowance (the store's clock is not
    ours), before the snapshot was read. The age is taken at the snapshot, never now (a cached
    snapshot may have been read while the ledger was young); an unknown age is not old.

    Why an old ledger that a snapshot does not reference can never be recorded afterwards,
    whatever its id, its creator or what that creator recorded since (Pulsar 4.0.8's source,
    read in its sources jars; `min_ledger_age` defaults to 600 s):

    - **Data ledgers** (managed-ledger/.../impl/ManagedLedgerImpl.java): a roll-over creates
      the ledger through `asyncCreateLedger`, which schedules `checkAndCompleteLedgerOpTask`
      after `managedLedgerMetadataOperationsTimeoutSeconds` (60 s): a creation that completes
      later is answered by deleting the late ledger ("ledger creation timed-out, deleting
      ledger"). The new ledger is then recorded by one conditional put of `ManagedLedgerInfo`
      (`updateLedgersListAfterRollover` -> `MetaStoreImpl.asyncUpdateLedgerIds`); on any
      failure `createComplete`'s `operationFailed` deletes it (a BadVersion also fences the
      managed ledger), and nothing ever retries the record with the same ledger: the next add
      creates another.
    - **Cursor ledgers** (ManagedCursorImpl.java): `doCreateNewMetadataLedger` creates through
      the same timed `asyncCreateLedger`, writes the position (a BookKeeper add, bounded by
      `bookkeeperClientTimeoutInSeconds`, 30 s: BookKeeperClientFactoryImpl's add timeout),
      then `switchToNewLedger` records `cursorsLedgerId` with one metadata put; a failed write
      or put deletes the new ledger ("should be deleted to prevent leak"), and the cursor's
      next switch creates another.
    - **Schema ledgers** (pulsar-broker/.../service/schema/BookkeeperSchemaStorage.java):
      `putSchema` creates, writes and closes a ledger, then puts the `SchemaLocator` with its
      version; a put that loses that race is retried from the start with a *new* ledger (the
      loser's is deleted by `updateSchemaLocator`, or leaked by `createSchemaLocator`), so a
      losing ledger is never recorded. Its metadata znode is written when the creation
      completes, so its age counts from there.
    - **Owners**: a pending metadata put is retried only while the broker's ZooKeeper
      connection is lost within its session (`metadataStoreSessionTimeoutMillis`, 30 s); on
      expiry it fails and the ledger is deleted as above. A new owner of the topic rewrites
      the managed ledger's znode when it opens it, so an old owner's late put fails on the
      version.

    So, with ZooKeeper serving, no ledger is recorded more than about two minutes (60 s +
    30 s + one put) after its metadata znode was created: one older than `min_ledger_age`
    when the snapshot was read, and absent from it, is an orphan for good: the zombie of a
    creation whose broker crashed before recording it, on a topic that may never roll over
    again or a cursor never acknowledged again. It is deleted, whatever its creator has
    recorded since. A ledger younger than that is never deleted: it may be being created.
    What the bound leaves out: a ZooKeeper ensemble that loses its quorum keeps its sessions
    (a new leader restarts every session's timer), and Pulsar's ZKMetadataStore retries a
    ConnectionLoss every 100 ms within its session, so a broker's put pending since before
    such an outage lands right after it, however long the outage lasted. A broker that
    reconnects later than `metadataStoreSessionTimeoutMillis` after the quorum is back finds
    its session expired and its put failed. So the deleter uses, with the age rule on, only a
    snapshot read at least that long (`SafetyMargins.settle`) after its own (re)connection to
    the store, which is no earlier than the quorum's return (`LedgerDeleter`). A compacted
    ledger has no bound in time at all (phase two of compaction has no timeout), but one in
    position: kinds.compacted_still_recordable, then the age rule. A delayed-delivery bucket
    snapshot is recorded within the same bounds as the others (a ledger made, then one cursor
    put), but may be read from memory without being recorded: kinds.bucket_still_read, then
    the age rule.

    `min_ledger_age` 0 turns the age rule off (a store without creation times; the tests'
    just-made ledgers). Then **the creator's own sequence** is the only guard
    (`_creator_may_record`): a creator makes one ledger at a time and records it or gives it up
    before it makes the next, and BookKeeper hands out ids in increasing order, so a ledger
    below the one its own creator (named by the ledger's custom metadata, checked against the
    message first) last recorded will never be recorded by it; a creator that is gone records
    nothing. That guard keeps a zombie above its creator's newest ledger until the creator
    moves past it (perhaps never), and cannot tell a schema ledger being created from a
    leftover: it is a fallback, not the rule.

    A ledger whose BookKeeper metadata is gone (`record` None) can no longer be opened, so no
    broker can ever record it, whatever its age: what is left is at most an offloaded copy.
    """
    ledger_id = info.ledger_id
    if record is None:
        return Decision(Verdict.SAFE_TO_DELETE, f"ledger {ledger_id} is gone from BookKeeper")
    kind = info.kind
    if kind is not None:  # rules of its own, then the age rule as for every ledger
        why = (
            kinds.bucket_still_read(info, record, snapshot)
            if kind is LedgerKind.DELAYED_INDEX_BUCKET
            else kinds.compacted_still_recordable(info, snapshot)
        )
        if why is not None:
            return Decision(Verdict.NOT_YET, why)
    elif margins.min_ledger_age <= 0:
        creator = _creator_may_record(info, record, snapshot)
        if creator is not None:
            return Decision(Verdict.NOT_YET, creator)
    return decide_age(ledger_id, record.ctime_ms, snapshot.fetched_at, margins)


def _creator_may_record(
    info: PendingDeleteLedgerInfo, record: LedgerRecord, snapshot: TopicLedgers
) -> str | None:
    """Why the ledger's creator may still record it (the fallback of `decide_recordable` when
    the age rule is off), or None if it cannot."""
    ledger_id, topic = info.ledger_id, info.topic_name
    if not snapshot.exists or ledger_id in snapshot.ledger_ids:
        # No managed ledger: nothing of the topic can record it. Referenced by id (an
        # offloaded copy the snapshot's UUID does not name): recorded already.
        return None
    if info.ledger_component is LedgerComponent.SCHEMA_STORAGE:
        return None  # no sequence to vouch with: the age rule alone
    creators = snapshot.creators
    if creators is None:
        return f"the in-use source cannot tell what the creators of {topic} last recorded"
    if info.ledger_component is LedgerComponent.MANAGED_CURSOR:
        cursor = record.metadata_text(CURSOR_KEY) or ""
        current = creators.cursors.get(cursor)
        if current is None or ledger_id < current:
            return None
        return (
            f"cursor {cursor!r} of {topic} has recorded no ledger after {ledger_id} "
            f"(its ledger is {current}): it may still be creating it"
        )
    newest = creators.newest_data
    if newest is not None and ledger_id < newest:
        return None
    return (
        f"the managed ledger of {topic} has recorded no ledger after {ledger_id} "
        f"(its newest is {newest}): it may still be creating it"
    )


def decide_age(
    ledger_id: int, created_ms: int | None, snapshot_at: EpochSeconds, margins: SafetyMargins
) -> Decision:
    """The age rule of `decide_recordable`: old enough when the snapshot was read. A too-young
    ruling says when the ledger will be old enough (`old_at`). A minimum age of 0 turns the
    rule off (a store whose creation times are conservative, as etcd's revision clock, may
    date a ledger after the snapshot); an unknown age is still not old."""
    if created_ms is None:
        return Decision(Verdict.NOT_YET, f"the age of ledger {ledger_id} is unknown")
    age = snapshot_at - created_ms / 1000.0 - margins.clock_skew
    if age < margins.min_ledger_age and margins.min_ledger_age > 0:
        old_at = EpochSeconds(snapshot_at + margins.min_ledger_age - age)
        return Decision(
            Verdict.NOT_YET,
            f"ledger {ledger_id} is too young ({max(age, 0.0):.0f}s of "
            f"{margins.min_ledger_age:.0f}s) to delete while it may still be recorded",
            old_at=old_at,
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
    kind = info.kind
    expected = (
        _expected_items(info.topic_name, info.ledger_component)
        if kind is None
        else kinds.expected_items(info.topic_name, kind)
    )
    written = record.custom_metadata
    for key, value in expected:
        if written.get(key) == _utf8(value):  # as the text compared below, without decoding
            continue
        actual = record.metadata_text(key)
        if actual != value:
            return Decision(
                Verdict.REFUSED,
                f"ledger {info.ledger_id} metadata {key}={actual!r}, expected {value!r}",
            )
    is_cursor = CURSOR_KEY in written
    if kind is None and is_cursor != (info.ledger_component is LedgerComponent.MANAGED_CURSOR):
        return Decision(
            Verdict.REFUSED,
            f"ledger {info.ledger_id} is {'a' if is_cursor else 'not a'} cursor ledger, "
            f"but the message says {info.ledger_component.value}",
        )
    return None


@functools.lru_cache(maxsize=4096)
def _utf8(text: str) -> bytes:
    return text.encode()


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
        expected[CURSOR_KEY] = cursor
    return {key: value.encode() for key, value in expected.items()}
