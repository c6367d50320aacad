"""`audit --enqueue` with one namespace refused (its deletion topic holds another producer's
schema): the others' orphans are still enqueued, the refused one is named on one line, and
the audit still fails (issue 31: "enqueue failed after 0 of 17" for every namespace)."""

from __future__ import annotations

import pytest

from audit.enqueue import send_all
from audit.errors import AuditError
from core.errors import EnqueueError
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.topics import NamespaceName, TopicName

SQUATTED = NamespaceName("t", "squatted")
WHY = "IncompatibleSchema: another writer's"


class RefusingOne:
    """PhaseOne's contract: every send of a batch acknowledged, else EnqueueError listing
    each refused ledger under a heading."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def enqueue(self, infos: list[PendingDeleteLedgerInfo]) -> list[object]:
        refused = [i for i in infos if i.topic_name.namespace == SQUATTED]
        if refused:
            raise EnqueueError(
                "phase one failed; metadata must not change:\n"
                + "\n".join(
                    f"{i.describe()}: IncompatibleSchema: another writer's" for i in refused
                )
            )
        self.sent += [i.ledger_id for i in infos]
        return [None] * len(infos)


def _orphans(namespace: NamespaceName, ids: range) -> list[PendingDeleteLedgerInfo]:
    topic = TopicName(namespace, "t")
    return [PendingDeleteLedgerInfo(topic, LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, i)
            for i in ids]  # fmt: skip


def test_one_refused_namespace_leaves_the_others_enqueued_and_is_named_once() -> None:
    infos = (
        _orphans(NamespaceName("t", "a"), range(1, 8))
        + _orphans(SQUATTED, range(10, 16))
        + _orphans(NamespaceName("t", "b"), range(20, 24))
    )
    phase_one = RefusingOne()
    advanced: list[int] = []
    with pytest.raises(AuditError) as refused:
        send_all(phase_one, infos, batch_size=3, advance=advanced.append)
    assert sorted(phase_one.sent) == [*range(1, 8), *range(20, 24)]
    assert sum(advanced) == 11
    assert str(refused.value).splitlines() == [
        "enqueued 11 of 17; 1 of 3 namespaces refused:",
        "  t/squatted: 6 not enqueued: IncompatibleSchema: another writer's",
    ]


def test_nothing_refused_is_no_error() -> None:
    infos = _orphans(NamespaceName("t", "a"), range(1, 5))
    assert send_all(RefusingOne(), infos, batch_size=2) == 4


def test_deletion_namespaces_limit_what_the_audit_enqueues() -> None:
    """A pilot on one namespace (deletionNamespaces): the audit enqueues its orphans only,
    and a refused namespace outside it does not fail the audit."""
    infos = (
        _orphans(NamespaceName("t", "a"), range(1, 4))
        + _orphans(SQUATTED, range(10, 12))
        + _orphans(NamespaceName("t", "b"), range(20, 22))
    )
    phase_one = RefusingOne()
    assert send_all(phase_one, infos, batch_size=2, only=("t/b",)) == 2
    assert phase_one.sent == [20, 21]
