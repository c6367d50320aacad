"""Pending deletions that name a kind of ledger (`ledgerKind` in the record's properties):
the message stays Java's `PendingDeleteLedgerInfo`, a reader that lacks the kind refuses it,
a bucket snapshot ledger goes only once no tracker can read it, a compacted ledger only once a
later compaction is recorded above it (deletion/domain/kinds.py)."""

from __future__ import annotations

import io

import fastavro
import pytest

from core.clock import EpochSeconds
from core.errors import DecodeError
from deletion.domain.decision import (
    Decision,
    SafetyMargins,
    Verdict,
    check_ownership,
    decide_in_use,
    decide_recordable,
    pulsar_custom_metadata,
)
from deletion.domain.kinds import cursor_name
from deletion.domain.message import (
    KIND_PROPERTY,
    SCHEMA,
    LedgerComponent,
    LedgerKind,
    LedgerType,
    PendingDeleteLedgerInfo,
    decode,
    encode,
    of_kind,
)
from deletion.domain.ports import Creators, LedgerRecord, TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName

TOPIC = TopicName(NamespaceName("t6", "ns6"), "delayed-partition-0")
DUE = EpochSeconds(1_000_000.0)
AGE_RULE = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=600)
BUCKET = of_kind(TOPIC, LedgerKind.DELAYED_INDEX_BUCKET, 40)
KEY = "#pulsar.internal.delayed.bucket_12_17"  # data ledgers 12..17


def bucket_record(
    ledger_id: int = 40, cursor: str = "sub one", key: str = KEY, age: float = 3600
) -> LedgerRecord:
    """As BookkeeperBucketSnapshotStorage writes it (LedgerMetadataUtils)."""
    metadata = {
        "application": b"pulsar",
        "component": b"delayed-index-bucket",
        "pulsar/delayedIndexTopic": TOPIC.full_name.encode(),
        "pulsar/delayedIndexCursor": cursor.encode(),
        "pulsar/delayedIndexBucketKey": key.encode(),
    }
    return LedgerRecord(ledger_id, metadata, round((DUE - age) * 1000), 1)


def snapshot(
    acked: dict[str, int] | None, referenced: frozenset[int] = frozenset({12, 30})
) -> TopicLedgers:
    return TopicLedgers(
        TOPIC, True, referenced, DUE, creators=Creators(18, {}), acked_through=acked
    )


def judged(
    record: LedgerRecord, taken: TopicLedgers, margins: SafetyMargins = AGE_RULE
) -> Decision:
    first = decide_in_use(BUCKET, taken, DUE)
    if first.verdict is not Verdict.SAFE_TO_DELETE:
        return first
    refused = check_ownership(BUCKET, record)
    return refused or decide_recordable(BUCKET, record, taken, margins)


def test_a_kind_rides_in_the_properties_of_javas_record_and_round_trips() -> None:
    assert BUCKET.ledger_component is LedgerComponent.MANAGED_CURSOR
    assert BUCKET.properties == {KIND_PROPERTY: "DELAYED_INDEX_BUCKET"}
    compacted = of_kind(TOPIC, LedgerKind.COMPACTED_LEDGER, 41)
    assert compacted.ledger_component is LedgerComponent.MANAGED_LEDGER
    for info in (BUCKET, compacted):
        assert decode(encode(info)) == info
    assert BUCKET.describe() == f"DELAYED_INDEX_BUCKET 40 of {TOPIC}"


@pytest.mark.parametrize(
    ("component", "kind", "problem"),
    [
        (LedgerComponent.MANAGED_LEDGER, "SOMETHING_NEW", "unknown ledgerKind 'SOMETHING_NEW'"),
        (LedgerComponent.MANAGED_LEDGER, "DELAYED_INDEX_BUCKET", "is sent as MANAGED_CURSOR"),
        (LedgerComponent.SCHEMA_STORAGE, "COMPACTED_LEDGER", "is sent as MANAGED_LEDGER"),
    ],
)
def test_an_unknown_kind_or_one_under_another_component_does_not_decode(
    component: LedgerComponent, kind: str, problem: str
) -> None:
    """As another producer may write it: the properties map is free-form on the wire."""
    record = {
        "topicName": str(TOPIC), "ledgerComponent": component.value, "ledgerType": "LEDGER",
        "ledgerId": 7, "context": None, "checkLedgerStillInUse": True,
        "properties": {KIND_PROPERTY: kind},
    }  # fmt: skip
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, record)
    with pytest.raises(DecodeError, match=problem):
        decode(out.getvalue())


def test_a_reader_without_the_kind_refuses_the_ledger_rather_than_deletes_it() -> None:
    """What an older ledger-janitor sees: the component alone. The ledger's own metadata names
    another component, so the ownership check refuses (archives) it."""
    unaware = PendingDeleteLedgerInfo(TOPIC, LedgerComponent.MANAGED_CURSOR, LedgerType.LEDGER, 40)
    refused = check_ownership(unaware, bucket_record())
    assert refused is not None and refused.verdict is Verdict.REFUSED
    assert "component='delayed-index-bucket'" in refused.reason
    # And one that knows the kind checks the bucket's own keys: the topic, in full.
    assert check_ownership(BUCKET, bucket_record()) is None
    elsewhere = of_kind(TopicName(TOPIC.namespace, "other"), LedgerKind.DELAYED_INDEX_BUCKET, 40)
    wrong = check_ownership(elsewhere, bucket_record())
    assert wrong is not None and wrong.verdict is Verdict.REFUSED


@pytest.mark.parametrize(
    ("acked", "verdict", "why"),
    [
        ({"sub one": 18}, Verdict.SAFE_TO_DELETE, "unreferenced and 3590s old"),  # acked past 17
        ({}, Verdict.SAFE_TO_DELETE, "unreferenced"),  # the subscription was deleted
        ({"other": 99}, Verdict.SAFE_TO_DELETE, "unreferenced"),  # its cursor is gone
        ({"sub one": 17}, Verdict.NOT_YET, "not past the bucket's range ending at 17"),
        ({"sub one": -1}, Verdict.NOT_YET, "its tracker may still read ledger 40"),
        (None, Verdict.NOT_YET, "cannot read"),  # the admin API: no cursors' znodes
    ],
)
def test_an_unrecorded_bucket_goes_only_once_no_tracker_can_read_it(
    acked: dict[str, int] | None, verdict: Verdict, why: str
) -> None:
    decision = judged(bucket_record(), snapshot(acked))
    assert decision.verdict is verdict and why in decision.reason, decision


def test_a_recorded_bucket_is_kept_and_a_young_one_waits_for_the_age_rule() -> None:
    referenced = judged(bucket_record(), snapshot({}, frozenset({40})))
    assert referenced.verdict is Verdict.NOT_YET and referenced.referenced
    young = judged(bucket_record(age=60), snapshot({"sub one": 18}))
    assert young.verdict is Verdict.NOT_YET and "too young" in young.reason
    for key in (
        "#pulsar.internal.delayed.bucket_x",
        "#pulsar.internal.other_12_17",
        "#pulsar.internal.delayed.bucket_x_17",
        "#pulsar.internal.delayed.bucket_12_x",
    ):
        malformed = judged(bucket_record(key=key), snapshot({"sub one": 99}))
        assert malformed.verdict is Verdict.NOT_YET, key
        assert "names no cursor or range" in malformed.reason, key


def test_a_cursors_znode_name_is_decoded_as_pulsars_codec_does() -> None:
    assert cursor_name("sub+one%2Fa%C3%BC") == "sub one/aü"


COMPACTED = of_kind(TOPIC, LedgerKind.COMPACTED_LEDGER, 41)


def compacted_record(age: float = 3600) -> LedgerRecord:
    """As AbstractTwoPhaseCompactor writes it (LedgerMetadataUtils)."""
    metadata = {
        "application": b"pulsar",
        "component": b"compacted-ledger",
        "pulsar/compactedTopic": TOPIC.full_name.encode(),
        "pulsar/compactedTo": b"\x08\x05\x10\x03",  # MessageIdData 5:3
    }
    return LedgerRecord(41, metadata, round((DUE - age) * 1000), 1)


def compaction(
    mark: int | None, named: int | None, referenced: frozenset[int] = frozenset()
) -> TopicLedgers:
    """The topic as its metadata shows it: the __compaction cursor's znode (absent: `mark`
    None), acknowledged up to ledger `mark`, naming compacted ledger `named`."""
    acked = {} if mark is None else {"__compaction": mark}
    ids = frozenset({5, 44}) | referenced
    return TopicLedgers(
        TOPIC, True, ids, DUE, creators=Creators(44, {}), acked_through=acked, compacted=named
    )


@pytest.mark.parametrize(
    ("taken", "verdict", "why"),
    [
        # A later compaction recorded ledger 43, acknowledged in data ledger 44, above 41.
        (compaction(44, 43), Verdict.SAFE_TO_DELETE, "unreferenced and 3590s old"),
        (compaction(None, None), Verdict.SAFE_TO_DELETE, "unreferenced"),  # no __compaction
        (compaction(41, 43), Verdict.NOT_YET, "acknowledged up to ledger 41"),  # not above 41
        (compaction(40, 43), Verdict.NOT_YET, "may still record it"),
        (compaction(44, None), Verdict.NOT_YET, "compacted ledger None"),  # in its ledger only
        (compaction(44, 41, frozenset({41})), Verdict.NOT_YET, "still referenced"),  # the live one
    ],
)
def test_a_compacted_ledger_goes_once_a_later_compaction_is_recorded_above_it(
    taken: TopicLedgers, verdict: Verdict, why: str
) -> None:
    first = decide_in_use(COMPACTED, taken, DUE)
    decision = first
    if first.verdict is Verdict.SAFE_TO_DELETE:
        assert check_ownership(COMPACTED, compacted_record()) is None
        decision = decide_recordable(COMPACTED, compacted_record(), taken, AGE_RULE)
    assert decision.verdict is verdict and why in decision.reason, decision


def test_a_compacted_ledger_needs_its_cursors_read_and_the_age_rule() -> None:
    admin = TopicLedgers(TOPIC, True, frozenset({5}), DUE)  # the admin API: no cursors' znodes
    blind = decide_recordable(COMPACTED, compacted_record(), admin, AGE_RULE)
    assert blind.verdict is Verdict.NOT_YET and "cannot read" in blind.reason
    young = decide_recordable(COMPACTED, compacted_record(age=60), compaction(44, 43), AGE_RULE)
    assert young.verdict is Verdict.NOT_YET and "too young" in young.reason
    metadata = pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_LEDGER)
    record = LedgerRecord(41, metadata, 0, 1)  # a data ledger named as compacted: not its
    refused = check_ownership(COMPACTED, record)
    assert refused is not None and "component='managed-ledger'" in refused.reason
