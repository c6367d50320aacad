"""The decision rule, as pure functions: in use, and the age rule (the refusals are in
test_ownership)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.clock import EpochSeconds
from deletion.domain.decision import (
    Decision,
    SafetyMargins,
    Verdict,
    decide_age,
    decide_in_use,
)
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName

NS = NamespaceName("t", "ns")
TOPIC = TopicName(NS, "orders-partition-1")


def message(
    ledger_id: int,
    component: LedgerComponent = LedgerComponent.MANAGED_LEDGER,
    check: bool = True,
    topic: TopicName = TOPIC,
) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(
        topic, component, LedgerType.LEDGER, ledger_id, check_ledger_still_in_use=check
    )


DUE = EpochSeconds(1_000_000.0)
MARGINS = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=3600)


def snapshot(
    *ids: int, exists: bool = True, topic: TopicName = TOPIC, fetched_at: float = DUE
) -> TopicLedgers:
    return TopicLedgers(topic, exists, frozenset(ids), EpochSeconds(fetched_at))


def decide(info: PendingDeleteLedgerInfo, known: TopicLedgers) -> Decision:
    return decide_in_use(info, known, DUE)


# --- decide_in_use -------------------------------------------------------------------------


@pytest.mark.parametrize("check", [True, False])
def test_referenced_ledger_is_reconsumed(check: bool) -> None:
    decision = decide(message(5, check=check), snapshot(3, 5, 9))
    assert decision.verdict is Verdict.NOT_YET
    assert decision.referenced
    assert "referenced" in decision.reason


def test_an_unreferenced_ledger_is_let_go_on_the_snapshot_only_for_the_record_checks() -> None:
    decision = decide(message(4), snapshot(3, 5, 9))
    assert decision.verdict is Verdict.SAFE_TO_DELETE
    assert decision.reason == f"ledger 4 is no longer referenced by {TOPIC}"
    assert decision.snapshot == snapshot(3, 5, 9)  # what decide_recordable then judges by


@pytest.mark.parametrize("check", [True, False])
@pytest.mark.parametrize(
    "known",
    [snapshot(3, 5, 9), snapshot(), snapshot(exists=False), snapshot(8, exists=False)],
    ids=["lists-older", "empty", "absent", "absent-with-schema"],
)
def test_nothing_is_deleted_on_a_snapshot_read_before_the_message_was_due(
    check: bool, known: TopicLedgers
) -> None:
    """A topic deleted and re-created inside the cache's lifetime: the cached 'absent' (or
    any other) snapshot may predate the re-creation and the phase-one send."""
    early = TopicLedgers(known.topic, known.exists, known.ledger_ids, EpochSeconds(DUE - 0.001))
    for ledger_id in (1, 4, 10):
        decision = decide(message(ledger_id, check=check), early)
        assert decision.verdict is Verdict.NOT_YET
        assert not decision.referenced
    assert decide(message(4, check=check), snapshot(3, 5, 9, fetched_at=DUE)).verdict is (
        Verdict.SAFE_TO_DELETE
    )


def test_absent_topic_still_protects_its_schema_ledgers() -> None:
    # A deleted topic's schema may outlive it: an id the snapshot knows is never deleted.
    schema = message(8, LedgerComponent.SCHEMA_STORAGE)
    assert decide(schema, snapshot(8, exists=False)).verdict is Verdict.NOT_YET
    assert decide(message(7), snapshot(8, exists=False)).verdict is Verdict.SAFE_TO_DELETE


def test_an_unchecked_message_is_still_refused_a_referenced_ledger() -> None:
    assert decide(message(5, check=False), snapshot(5)).verdict is Verdict.NOT_YET
    decision = decide(message(10, check=False), snapshot(3, 5))
    assert (decision.verdict, decision.snapshot) == (Verdict.SAFE_TO_DELETE, snapshot(3, 5))


@st.composite
def snapshots(draw: st.DrawFn) -> TopicLedgers:
    ids = draw(st.frozensets(st.integers(0, 2**63 - 1), max_size=20))
    fetched_at = EpochSeconds(draw(st.floats(DUE - 100, DUE + 100)))
    return TopicLedgers(TOPIC, draw(st.booleans()), ids, fetched_at)


@settings(max_examples=300, deadline=None)
@given(snapshots(), st.data())
def test_never_deletes_a_ledger_in_the_snapshot_or_on_an_early_snapshot(
    known: TopicLedgers, data: st.DataObject
) -> None:
    ledger_id = data.draw(
        st.sampled_from(sorted(known.ledger_ids)) if known.ledger_ids else st.integers(0, 2**63 - 1)
    )
    info = PendingDeleteLedgerInfo(
        TOPIC,
        data.draw(st.sampled_from(LedgerComponent)),
        LedgerType.LEDGER,
        ledger_id,
        check_ledger_still_in_use=data.draw(st.booleans()),
    )
    decision = decide(info, known)
    if ledger_id in known.ledger_ids or known.fetched_at < DUE:
        assert decision.verdict is Verdict.NOT_YET
    else:
        assert (decision.verdict, decision.snapshot) == (Verdict.SAFE_TO_DELETE, known)


# --- decide_age ----------------------------------------------------------------------------


def test_age_unknown_is_not_old() -> None:
    decision = decide_age(7, None, DUE, MARGINS)
    assert decision.verdict is Verdict.NOT_YET
    assert "unknown" in decision.reason


@pytest.mark.parametrize(
    ("age_seconds", "verdict"),
    [
        (0, Verdict.NOT_YET),
        (3600, Verdict.NOT_YET),  # the skew allowance comes on top
        (3609.9, Verdict.NOT_YET),
        (3610, Verdict.SAFE_TO_DELETE),
        (86_400, Verdict.SAFE_TO_DELETE),
        (-600, Verdict.NOT_YET),  # created "in the future": the store's clock is ahead
    ],
)
def test_a_ledger_must_be_older_than_the_grace_period_plus_skew(
    age_seconds: float, verdict: Verdict
) -> None:
    created_ms = round((DUE - age_seconds) * 1000)
    assert decide_age(7, created_ms, DUE, MARGINS).verdict is verdict


@pytest.mark.parametrize(
    ("age_seconds", "reason"),
    [
        (86_410, "ledger 7 is unreferenced and 86400s old"),
        (1810, "ledger 7 is too young (1800s of 3600s) to delete while it may still be recorded"),
        (-600, "ledger 7 is too young (0s of 3600s) to delete while it may still be recorded"),
    ],
)
def test_the_age_rule_says_how_old_the_ledger_is(age_seconds: float, reason: str) -> None:
    """The age net of the skew allowance; a creation time ahead of ours reads as 0 s."""
    created_ms = round((DUE - age_seconds) * 1000)
    assert decide_age(7, created_ms, DUE, MARGINS).reason == reason


@pytest.mark.parametrize("age_seconds", [0.0, 1810.0, 3609.0, -600.0])
def test_a_too_young_ruling_says_when_the_ledger_will_be_old_enough(age_seconds: float) -> None:
    """Created at DUE - age by the store's clock: old enough at created + min age + skew."""
    created_ms = round((DUE - age_seconds) * 1000)
    decision = decide_age(7, created_ms, DUE, MARGINS)
    assert decision.old_at is not None
    assert decision.old_at == pytest.approx(created_ms / 1000 + 3600 + 10)
    assert decide_age(7, created_ms, decision.old_at, MARGINS).verdict is Verdict.SAFE_TO_DELETE
    earlier = EpochSeconds(decision.old_at - 0.01)
    assert decide_age(7, created_ms, earlier, MARGINS).verdict is Verdict.NOT_YET


def test_an_old_enough_ruling_names_no_time() -> None:
    assert decide_age(7, 0, DUE, MARGINS).old_at is None


def test_zero_grace_turns_the_age_rule_off_even_for_a_creation_time_ahead_of_ours() -> None:
    """A conservative clock (etcd's revision clock) may date a ledger after the snapshot."""
    margins = SafetyMargins(send_delay=0, clock_skew=0, min_ledger_age=0)
    ahead = round((DUE + 5) * 1000)
    assert decide_age(7, ahead, DUE, margins).verdict is Verdict.SAFE_TO_DELETE
    one_second = SafetyMargins(send_delay=0, clock_skew=0, min_ledger_age=1)
    assert decide_age(7, ahead, DUE, one_second).verdict is Verdict.NOT_YET


def test_zero_grace_still_needs_a_known_age() -> None:
    margins = SafetyMargins(send_delay=0, clock_skew=0, min_ledger_age=0)
    assert decide_age(7, round(DUE * 1000), DUE, margins).verdict is Verdict.SAFE_TO_DELETE
    assert decide_age(7, None, DUE, margins).verdict is Verdict.NOT_YET
