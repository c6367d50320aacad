"""LedgerDeleter's own rules, through the handler and the fakes of handler_rig: which
snapshot it decides on, the version it deletes at, whose margins it applies, and offloaded
copies (a real filesystem offload store under tmp_path)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from core.clock import EpochSeconds
from deletion.adapters.offload import offload_context
from deletion.adapters.offload.filesystem import FileSystemOffloadStorage
from deletion.domain.decision import Decision, SafetyMargins, Verdict, pulsar_custom_metadata
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome, Result
from deletion.domain.ports import LedgerRecord
from deletion.domain.topics import TopicName
from harness.offload_objects import base_metadata, plant_mapfile
from tests.unit.handler_rig import NOW, NS, TOPIC, Rig, _info, _outcomes, _record, rig

__all__ = ["rig"]  # the fixture

DUE = NOW - 30  # published at NOW - 100, the 60 s send delay, the 10 s skew allowance
RIVAL = TopicName.parse("persistent://rival/secret/ledger")


# --- which snapshot --------------------------------------------------------------------------


def test_a_cached_snapshot_read_before_the_due_time_is_read_anew(rig: Rig) -> None:
    rig.cache = rig.new_cache()
    rig.source.fetched_at = DUE - 20
    rig.cache.lookup(TOPIC)
    rig.source.fetched_at = NOW
    result = rig.handle(_info(3))
    assert result.outcome is Outcome.DELETED
    assert rig.source.calls == 2


def test_a_cached_snapshot_read_after_the_due_time_serves_a_checked_message(rig: Rig) -> None:
    rig.cache = rig.new_cache()
    rig.source.fetched_at = DUE + 10
    rig.cache.lookup(TOPIC)
    assert rig.handle(_info(3)).outcome is Outcome.DELETED
    assert rig.source.calls == 1  # one metadata read per topic per TTL


def test_an_unchecked_message_is_decided_on_a_snapshot_read_now(rig: Rig) -> None:
    """checkLedgerStillInUse=false skips the staleness rule, so only a snapshot read now will
    do: one cached since the due time may miss the reference made after it."""
    rig.cache = rig.new_cache()
    rig.source.fetched_at = DUE + 10
    rig.cache.lookup(TOPIC)
    rig.source.ledgers, rig.source.fetched_at = frozenset({3, 5, 9}), NOW
    result = rig.handle(_info(3, check=False))
    assert result.outcome is Outcome.RECONSUMED
    assert "still referenced" in result.reason
    assert 3 in rig.storage.records and rig.source.calls == 2


def test_a_batch_reuses_a_snapshot_only_for_the_messages_it_is_fresh_enough_for(
    rig: Rig,
) -> None:
    """A batch keeps the snapshot the cache gave its first message of a topic for the next
    ones; an unchecked one later in the batch still wants a snapshot read now."""
    rig.cache = rig.new_cache()
    rig.source.fetched_at = DUE + 10
    rig.cache.lookup(TOPIC)
    rig.source.ledgers, rig.source.fetched_at = frozenset({3, 5, 9}), NOW
    rig.storage.records[6] = _record(6)
    results = rig.handle_batch(_info(4), _info(6), _info(3, check=False))
    assert _outcomes(results) == ["deleted", "deleted", "reconsumed"]
    assert "still referenced" in results[2].reason
    assert rig.source.calls == 2  # the first look-up, then the unchecked message's
    assert rig.cache.counters.hits == 2  # the first message's, and the second's from the batch


def test_the_message_topic_is_the_one_looked_up(rig: Rig) -> None:
    # Ledger 5 is referenced by TOPIC only; any other topic has no managed ledger at all.
    result = rig.handle(_info(5))
    assert result.outcome is Outcome.RECONSUMED
    assert result.reason == f"ledger 5 is still referenced by {TOPIC}"


# --- the ledger's own record -----------------------------------------------------------------


def test_a_ledger_rewritten_between_the_read_and_the_delete_is_kept(rig: Rig) -> None:
    rig.storage.rewritten_after_read.add(3)
    results = rig.handle_batch(_info(3), _info(3), _info(4))
    assert _outcomes(results) == ["reconsumed", "reconsumed", "deleted"]
    assert results[0].reason == results[1].reason == "ledger 3 changed while deleting"
    assert 3 in rig.storage.records and rig.storage.deleted == [4]


def test_a_failed_delete_says_why_and_holds_back_no_other(rig: Rig) -> None:
    rig.storage.refused.add(4)
    results = rig.handle_batch(_info(4), _info(3))
    assert _outcomes(results) == ["reconsumed", "deleted"]
    assert "deleting ledger 4: permission denied" in results[0].reason
    assert 4 in rig.storage.records and 3 not in rig.storage.records


def test_the_configured_minimum_age_is_the_one_applied(rig: Rig) -> None:
    rig.margins = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=300)
    ten_minutes_ago = int((NOW - 600) * 1000)
    rig.storage.records[6] = LedgerRecord(6, _record(6).custom_metadata, ten_minutes_ago, 1)
    assert rig.handle(_info(6)).outcome is Outcome.DELETED


def test_age_is_taken_when_the_snapshot_was_read_not_now(rig: Rig) -> None:
    """A snapshot cached while ledger 12 was young and not yet recorded may serve a message
    (a duplicate, say) long after: by then the ledger is old, and may have been recorded
    since. Old at the snapshot, not now, is what proves no recording is missing from it."""
    rig.margins = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=300)
    created_ms = int((NOW - 320) * 1000)  # 320 s old now, 310 s with the skew allowance
    rig.storage.records[6] = LedgerRecord(6, _record(6).custom_metadata, created_ms, 1)
    rig.cache = rig.new_cache()
    rig.source.fetched_at = DUE + 10  # after the due time, so the cache may serve it
    rig.cache.lookup(TOPIC)  # ledger 6 was 230 s old then: too young
    result = rig.handle(_info(6))
    assert result.outcome is Outcome.RECONSUMED and "too young" in result.reason
    assert 6 in rig.storage.records and rig.source.calls == 1
    rig.source.fetched_at = NOW  # a snapshot read now (the cache expired): old enough then
    rig.cache = rig.new_cache()
    assert rig.handle(_info(6)).outcome is Outcome.DELETED


def test_a_ledger_no_snapshot_vouches_for_that_bookkeeper_no_longer_has_is_gone(
    rig: Rig,
) -> None:
    result = rig.handle(_info(12))  # above the largest referenced (9), no metadata
    assert result.outcome is Outcome.ALREADY_GONE
    assert result.reason == "ledger 12 is already gone"


def test_a_young_ledger_naming_another_topic_is_archived_at_once(rig: Rig) -> None:
    """Ownership comes before age: waiting cannot make another topic's ledger ours."""
    metadata = pulsar_custom_metadata(RIVAL, LedgerComponent.MANAGED_LEDGER)
    rig.storage.records[12] = LedgerRecord(12, metadata, int((NOW - 60) * 1000), 1)
    result = rig.handle(_info(12))
    assert result.outcome is Outcome.ARCHIVED
    assert "pulsar/managed-ledger" in result.reason
    assert 12 in rig.storage.records


# --- what it reports ---------------------------------------------------------------------


def test_a_dry_run_says_what_it_would_delete_and_deletes_nothing(rig: Rig) -> None:
    handler, due = rig.handler(), EpochSeconds(DUE)
    safe = handler.decide(_info(3), NS, due, dry_run=True)
    assert safe == Result(
        Outcome.WOULD_DELETE, "ledger 3 is unreferenced and 999990s old", _info(3)
    )
    gone = handler.decide(_info(7), NS, due, dry_run=True)
    assert gone == Result(Outcome.ALREADY_GONE, "ledger 7 is already gone", _info(7))
    assert rig.storage.deleted == [] and rig.storage.batches == ["read 1", "read 1"]


def test_what_is_not_to_be_deleted_now_comes_back_as_the_decision(rig: Rig) -> None:
    ruling = rig.handler().decide(_info(5), NS, EpochSeconds(DUE))
    assert ruling == Decision(Verdict.NOT_YET, f"ledger 5 is still referenced by {TOPIC}", True)
    assert rig.storage.batches == []


# --- offloaded copies ------------------------------------------------------------------------


def _offloaded(
    ledger_id: int, base: Path, complete: bool = True
) -> tuple[PendingDeleteLedgerInfo, str]:
    ledger_uuid = str(uuid.uuid4())
    context = offload_context(
        ledger_id, ledger_uuid, "filesystem", {"storageBasePath": str(base)}, complete=complete
    )
    info = PendingDeleteLedgerInfo(
        TOPIC, LedgerComponent.MANAGED_LEDGER, LedgerType.OFFLOAD_LEDGER, ledger_id, context
    )
    return info, ledger_uuid


@pytest.fixture
def base(tmp_path: Path, rig: Rig) -> Path:
    path = tmp_path / "offload"
    path.mkdir()
    rig.offload = FileSystemOffloadStorage(path)
    return path


def test_an_offloaded_copy_is_deleted_once(rig: Rig, base: Path) -> None:
    info, ledger_uuid = _offloaded(3, base)
    planted = plant_mapfile(base, TOPIC.managed_ledger_name, 3, ledger_uuid)
    ruling = rig.handler().decide(info, NS, EpochSeconds(DUE))
    assert ruling == Result(Outcome.DELETED, f"deleted offloaded ledger 3 of {TOPIC}", info)
    assert not planted.exists()
    assert 3 in rig.storage.records  # the BookKeeper copy has its own message
    again = rig.handle(info)
    assert again.outcome is Outcome.ALREADY_GONE
    assert again.reason == "offloaded ledger 3 is already gone"


def test_a_dry_run_deletes_no_offloaded_copy(rig: Rig, base: Path) -> None:
    info, ledger_uuid = _offloaded(3, base)
    planted = plant_mapfile(base, TOPIC.managed_ledger_name, 3, ledger_uuid)
    ruling = rig.handler().decide(info, NS, EpochSeconds(DUE), dry_run=True)
    assert ruling == Result(Outcome.WOULD_DELETE, "offloaded ledger 3 may be deleted", info)
    assert planted.exists()


def test_an_unfinished_offload_is_reconsumed(rig: Rig, base: Path) -> None:
    info, ledger_uuid = _offloaded(3, base, complete=False)
    planted = plant_mapfile(base, TOPIC.managed_ledger_name, 3, ledger_uuid)
    result = rig.handle(info)
    assert result.outcome is Outcome.RECONSUMED
    assert result.reason.startswith("offload still in progress: ledger 3")
    assert planted.exists()


def test_offloaded_objects_naming_another_topic_are_archived_and_kept(rig: Rig, base: Path) -> None:
    info, ledger_uuid = _offloaded(3, base)
    custom = base_metadata(RIVAL.managed_ledger_name)
    planted = plant_mapfile(base, TOPIC.managed_ledger_name, 3, ledger_uuid, custom=custom)
    result = rig.handle(info)
    assert result.outcome is Outcome.ARCHIVED
    assert result.reason.startswith("cannot delete offloaded ledger: ")
    assert planted.exists()


def test_an_unreachable_offload_store_is_unknown(rig: Rig, base: Path) -> None:
    info, _ = _offloaded(3, base)
    base.rmdir()  # unmounted: every ledger would look already deleted
    result = rig.handle(info)
    assert result.outcome is Outcome.RECONSUMED
    assert f"offload base path {base} is not a directory" in result.reason


def test_offloaded_ledgers_without_offload_storage_are_archived(rig: Rig, tmp_path: Path) -> None:
    info, _ = _offloaded(3, tmp_path)
    result = rig.handle(info)
    assert result.outcome is Outcome.ARCHIVED
    assert result.reason == "no offload storage is configured for OFFLOAD_LEDGER"
