"""Whether anything can still record a ledger no snapshot references (`decide_recordable`):
the age rule, for every pairing of a ledger being created by one of a topic's creators while
another has already recorded a newer one; every old orphan goes, whatever its creator has
recorded since; and, with the age rule off, the creator's own sequence as the fallback."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.clock import EpochSeconds
from deletion.domain.decision import (
    Decision,
    SafetyMargins,
    Verdict,
    decide_in_use,
    decide_recordable,
    pulsar_custom_metadata,
)
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import Creators, LedgerRecord, TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName

TOPIC = TopicName(NamespaceName("t5", "ns5"), "orders")
DUE = EpochSeconds(1_000_000.0)
DEFAULT = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=600)
SHORT = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=30)
NO_AGE = SafetyMargins(send_delay=0, clock_skew=0, min_ledger_age=0)
DATA, CURSOR, SCHEMA = (
    LedgerComponent.MANAGED_LEDGER,
    LedgerComponent.MANAGED_CURSOR,
    LedgerComponent.SCHEMA_STORAGE,
)

# A creator, as (component, cursor name).
Creator = tuple[LedgerComponent, str]
ML, SUB, OTHER, SCHEMAS = (DATA, ""), (CURSOR, "sub"), (CURSOR, "other"), (SCHEMA, "")


def record(ledger_id: int, creator: Creator, age_seconds: float) -> LedgerRecord:
    component, cursor = creator
    metadata = pulsar_custom_metadata(TOPIC, component, cursor or "sub")
    return LedgerRecord(ledger_id, metadata, round((DUE - age_seconds) * 1000), 1)


def info(ledger_id: int, creator: Creator) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(TOPIC, creator[0], LedgerType.LEDGER, ledger_id)


def topic_with(recorded_newer: Creator | None, newer: int = 23) -> TopicLedgers:
    """The issue's topic: data ledger 10, cursors `sub` on 5 and `other` on 6, schema 4; and
    perhaps one creator that has just recorded `newer`."""
    data, cursors, schemas = [10], {"sub": 5, "other": 6}, [4]
    if recorded_newer == ML:
        data.append(newer)
    elif recorded_newer == SCHEMAS:
        schemas.append(newer)
    elif recorded_newer is not None:
        cursors[recorded_newer[1]] = newer
    ids = frozenset([*data, *cursors.values(), *schemas])
    return TopicLedgers(TOPIC, True, ids, DUE, creators=Creators(max(data), cursors))


def judged(
    ledger_id: int, creator: Creator, snapshot: TopicLedgers, age: float, margins: SafetyMargins
) -> Decision:
    """Through both halves, as the deleter calls them."""
    first = decide_in_use(info(ledger_id, creator), snapshot, DUE)
    if first.verdict is not Verdict.SAFE_TO_DELETE:
        return first
    return decide_recordable(
        info(ledger_id, creator), record(ledger_id, creator, age), snapshot, margins
    )


PAIRINGS = [
    (being_created, recorded)
    for being_created in (ML, SUB, SCHEMAS)
    for recorded in (ML, SUB, OTHER, SCHEMAS)
    if being_created != recorded
]


@pytest.mark.parametrize("margins", [DEFAULT, SHORT], ids=["default-age", "short-age"])
@pytest.mark.parametrize(("being_created", "recorded"), PAIRINGS)
def test_a_ledger_being_created_below_another_creators_newer_ledger_is_kept(
    being_created: Creator, recorded: Creator, margins: SafetyMargins
) -> None:
    """Ledger 22 is being created (a few seconds old, recorded nowhere) while another creator
    of the topic records 23: the snapshot read after the due time does not vouch for 22."""
    decision = judged(22, being_created, topic_with(recorded), 5.0, margins)
    assert decision.verdict is Verdict.NOT_YET, decision.reason


@pytest.mark.parametrize(("being_created", "recorded"), PAIRINGS)
def test_with_no_age_rule_the_creator_alone_still_keeps_data_and_cursor_ledgers(
    being_created: Creator, recorded: Creator
) -> None:
    """minLedgerAge 0: the creator's own sequence is what keeps them. A schema ledger has no
    sequence: with no age rule, nothing can tell one being created from a leftover."""
    decision = judged(22, being_created, topic_with(recorded), 5.0, NO_AGE)
    if being_created == SCHEMAS:
        assert decision.verdict is Verdict.SAFE_TO_DELETE
    else:
        assert decision.verdict is Verdict.NOT_YET
        assert "may still be creating it" in decision.reason


def test_the_issue_scenario_says_why() -> None:
    decision = judged(22, SUB, topic_with(ML), 5.0, DEFAULT)
    assert decision.reason == (
        "ledger 22 is too young (0s of 600s) to delete while it may still be recorded"
    )
    decision = judged(22, SUB, topic_with(ML), 5.0, NO_AGE)
    assert decision.reason == (
        "cursor 'sub' of t5/ns5/orders has recorded no ledger after 22 (its ledger is 5): "
        "it may still be creating it"
    )
    decision = judged(22, ML, topic_with(SUB), 5.0, NO_AGE)
    assert decision.reason == (
        "the managed ledger of t5/ns5/orders has recorded no ledger after 22 (its newest is 10):"
        " it may still be creating it"
    )


@pytest.mark.parametrize("creator", [ML, SUB, OTHER])
def test_a_ledger_its_own_creator_has_moved_past_goes_once_old(creator: Creator) -> None:
    """Trimmed or rotated: its creator recorded 23 after it. Young, it waits for the age rule
    (and the ruling says until when); old, it goes."""
    young = judged(22, creator, topic_with(creator), 5.0, DEFAULT)
    assert young.verdict is Verdict.NOT_YET and "too young" in young.reason
    assert young.old_at == pytest.approx(DUE - 5.0 + 600 + 10)
    old = judged(22, creator, topic_with(creator), 611.0, DEFAULT)
    assert old.verdict is Verdict.SAFE_TO_DELETE, old.reason


def test_a_schema_ledger_goes_by_its_age_alone() -> None:
    assert judged(22, SCHEMAS, topic_with(None), 5.0, DEFAULT).verdict is Verdict.NOT_YET
    assert judged(22, SCHEMAS, topic_with(None), 611.0, DEFAULT).verdict is Verdict.SAFE_TO_DELETE


@pytest.mark.parametrize("recorded", [None, ML, SUB, OTHER, SCHEMAS])
@pytest.mark.parametrize("creator", [ML, SUB, OTHER])
def test_an_old_zombie_above_its_creators_newest_goes(creator: Creator, recorded: Creator) -> None:
    """A crash between creating and recording leaves a ledger above what its creator last
    recorded; the topic may never roll over again, the cursor never switch again. Older than
    the age rule, nothing can record it any more (Pulsar's own timeouts): it goes."""
    for age in (611.0, 86_400.0):
        decision = judged(40, creator, topic_with(recorded), age, DEFAULT)
        assert decision.verdict is Verdict.SAFE_TO_DELETE, decision.reason
    # Just younger than the rule: it may still be being created, so it stays.
    young = judged(40, creator, topic_with(recorded), 609.0, DEFAULT)
    assert young.verdict is Verdict.NOT_YET and "too young" in young.reason


@pytest.mark.parametrize("creator", [ML, SUB])
def test_with_the_age_rule_off_an_old_ledger_its_live_creator_has_not_moved_past_is_kept(
    creator: Creator,
) -> None:
    """The fallback guard: it goes once its creator records a newer one, never before."""
    decision = judged(22, creator, topic_with(None), 86_400.0, NO_AGE)
    assert decision.verdict is Verdict.NOT_YET and "may still be creating it" in decision.reason


def test_a_cursor_with_no_ledger_yet_may_be_creating_its_first() -> None:
    snapshot = TopicLedgers(TOPIC, True, frozenset({10}), DUE, creators=Creators(10, {"sub": -1}))
    assert judged(7, SUB, snapshot, 5.0, DEFAULT).verdict is Verdict.NOT_YET
    assert judged(7, SUB, snapshot, 86_400.0, DEFAULT).verdict is Verdict.SAFE_TO_DELETE
    decision = judged(7, SUB, snapshot, 86_400.0, NO_AGE)
    assert decision.verdict is Verdict.NOT_YET and "its ledger is -1" in decision.reason


def test_a_managed_ledger_with_no_ledger_yet_may_be_creating_its_first() -> None:
    snapshot = TopicLedgers(TOPIC, True, frozenset(), DUE, creators=Creators(None, {}))
    assert judged(7, ML, snapshot, 5.0, DEFAULT).verdict is Verdict.NOT_YET
    assert judged(7, ML, snapshot, 86_400.0, DEFAULT).verdict is Verdict.SAFE_TO_DELETE
    decision = judged(7, ML, snapshot, 86_400.0, NO_AGE)
    assert decision.verdict is Verdict.NOT_YET and "its newest is None" in decision.reason


def test_a_gone_creator_records_nothing_and_the_age_rule_decides() -> None:
    """The topic deleted (no managed ledger), or the cursor deleted (a cursor's znode exists
    before its first ledger, so an absent one is not being created)."""
    gone_topic = TopicLedgers(TOPIC, False, frozenset(), DUE, creators=Creators(None, {}))
    gone_cursor = TopicLedgers(TOPIC, True, frozenset({10}), DUE, creators=Creators(10, {}))
    for snapshot, creator in ((gone_topic, ML), (gone_topic, SUB), (gone_cursor, SUB)):
        assert judged(22, creator, snapshot, 5.0, DEFAULT).verdict is Verdict.NOT_YET
        assert judged(22, creator, snapshot, 611.0, DEFAULT).verdict is Verdict.SAFE_TO_DELETE
        assert judged(22, creator, snapshot, 5.0, NO_AGE).verdict is Verdict.SAFE_TO_DELETE


def test_a_source_that_cannot_name_the_creators_needs_the_age_rule() -> None:
    snapshot = TopicLedgers(TOPIC, True, frozenset({10, 23}), DUE)
    assert judged(22, ML, snapshot, 86_400.0, DEFAULT).verdict is Verdict.SAFE_TO_DELETE
    decision = judged(22, ML, snapshot, 86_400.0, NO_AGE)
    assert decision.verdict is Verdict.NOT_YET and "cannot tell" in decision.reason
    assert judged(22, SCHEMAS, snapshot, 86_400.0, NO_AGE).verdict is Verdict.SAFE_TO_DELETE


def test_a_ledger_gone_from_bookkeeper_can_never_be_recorded() -> None:
    first = decide_in_use(info(22, SUB), topic_with(None), DUE)
    assert first.snapshot is not None
    decision = decide_recordable(info(22, SUB), None, first.snapshot, DEFAULT)
    assert decision.verdict is Verdict.SAFE_TO_DELETE and "gone" in decision.reason


@pytest.mark.parametrize("check", [True, False])
def test_check_ledger_still_in_use_false_skips_neither_rule(check: bool) -> None:
    message = PendingDeleteLedgerInfo(
        TOPIC, CURSOR, LedgerType.LEDGER, 22, check_ledger_still_in_use=check
    )
    snapshot = topic_with(ML)
    assert decide_in_use(message, snapshot, DUE).verdict is Verdict.SAFE_TO_DELETE
    young = decide_recordable(message, record(22, SUB, 5.0), snapshot, DEFAULT)
    assert young.verdict is Verdict.NOT_YET
    unsequenced = decide_recordable(message, record(22, SUB, 86_400.0), snapshot, NO_AGE)
    assert unsequenced.verdict is Verdict.NOT_YET


@settings(max_examples=400, deadline=None)
@given(
    ledger_id=st.integers(0, 40),
    creator=st.sampled_from([ML, SUB, OTHER, SCHEMAS]),
    recorded=st.sampled_from([None, ML, SUB, OTHER, SCHEMAS]),
    newer=st.integers(0, 40),
    age=st.floats(-100, 100_000),
    margins=st.sampled_from([DEFAULT, SHORT, NO_AGE]),
)
def test_deletable_exactly_when_unreferenced_and_old_or_past_its_creator_without_age_rule(
    ledger_id: int,
    creator: Creator,
    recorded: Creator | None,
    newer: int,
    age: float,
    margins: SafetyMargins,
) -> None:
    """The rule, restated from the topic's layout (not from the product's helpers), both ways:
    nothing young or referenced is deleted, and every unreferenced old ledger is."""
    snapshot = topic_with(recorded, newer)
    decision = judged(ledger_id, creator, snapshot, age, margins)
    created_ms = record(ledger_id, creator, age).ctime_ms
    assert created_ms is not None
    data = [10, newer] if recorded == ML else [10]
    cursors = {"sub": 5, "other": 6}
    if recorded in (SUB, OTHER):
        cursors[recorded[1]] = newer
    schemas = [4, newer] if recorded == SCHEMAS else [4]
    referenced = ledger_id in {*data, *cursors.values(), *schemas}
    if margins.min_ledger_age > 0:
        old = DUE - created_ms / 1000 - margins.clock_skew >= margins.min_ledger_age
        expected = not referenced and old
    elif creator == ML:
        expected = not referenced and ledger_id < max(data)
    elif creator in (SUB, OTHER):
        expected = not referenced and ledger_id < cursors[creator[1]]
    else:
        expected = not referenced
    assert (decision.verdict is Verdict.SAFE_TO_DELETE) is expected, decision.reason
