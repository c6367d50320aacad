"""The in-use rule for offloaded copies: a ledger *and* its offload UUID must be referenced."""

from __future__ import annotations

import uuid as uuid_lib

from core.clock import EpochSeconds
from deletion.domain.decision import Verdict, decide_in_use
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

TOPIC = TopicName(NamespaceName("t", "ns"), "tiered")
DUE = EpochSeconds(1_000_000.0)
CURRENT, STALE = "123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000001"


def _halves(value: str) -> tuple[int, int]:
    number = uuid_lib.UUID(value).int
    msb, lsb = number >> 64, number & (2**64 - 1)
    return (msb - 2**64 if msb >= 2**63 else msb), (lsb - 2**64 if lsb >= 2**63 else lsb)


def offloaded(ledger_id: int, uuid: str | None) -> PendingDeleteLedgerInfo:
    info = ManagedLedgerInfo.LedgerInfo(ledgerId=ledger_id)
    info.offloadContext.complete = True
    if uuid is not None:
        info.offloadContext.uidMsb, info.offloadContext.uidLsb = _halves(uuid)
    return PendingDeleteLedgerInfo(
        TOPIC,
        LedgerComponent.MANAGED_LEDGER,
        LedgerType.OFFLOAD_LEDGER,
        ledger_id,
        info.SerializeToString(),
    )


def snapshot(uuids: dict[int, frozenset[str]] | None) -> TopicLedgers:
    return TopicLedgers(TOPIC, True, frozenset({5, 7}), DUE, uuids)


def test_the_referenced_offload_is_in_use() -> None:
    decision = decide_in_use(offloaded(5, CURRENT), snapshot({5: frozenset({CURRENT})}), DUE)
    assert decision.verdict is Verdict.NOT_YET and decision.referenced


def test_another_uuid_of_a_referenced_ledger_is_a_leftover_and_may_go() -> None:
    decision = decide_in_use(offloaded(5, STALE), snapshot({5: frozenset({CURRENT})}), DUE)
    assert decision.verdict is Verdict.SAFE_TO_DELETE and decision.snapshot is not None
    # Referenced, but not offloaded at all: no copy of it is read.
    decision = decide_in_use(offloaded(7, STALE), snapshot({5: frozenset({CURRENT})}), DUE)
    assert decision.verdict is Verdict.SAFE_TO_DELETE


def test_when_the_uuids_are_unknown_the_ledger_id_decides() -> None:
    decision = decide_in_use(offloaded(5, STALE), snapshot(None), DUE)
    assert decision.verdict is Verdict.NOT_YET and decision.referenced


def test_a_context_without_a_uuid_counts_as_referenced() -> None:
    decision = decide_in_use(offloaded(5, None), snapshot({5: frozenset({CURRENT})}), DUE)
    assert decision.verdict is Verdict.NOT_YET


def test_a_snapshot_read_before_the_due_time_vouches_for_nothing() -> None:
    early = TopicLedgers(TOPIC, True, frozenset({5}), EpochSeconds(DUE - 1), {5: frozenset()})
    assert decide_in_use(offloaded(5, STALE), early, DUE).verdict is Verdict.NOT_YET


def test_a_bookkeeper_ledger_is_judged_by_its_id_alone() -> None:
    info = PendingDeleteLedgerInfo(TOPIC, LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, 5)
    decision = decide_in_use(info, snapshot({5: frozenset()}), DUE)
    assert decision.verdict is Verdict.NOT_YET
