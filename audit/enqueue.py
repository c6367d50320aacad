"""Phase one for the orphans: each to its own namespace's deletion topic, re-checked.

Every message carries `checkLedgerStillInUse=true`, so the worker looks the topic's
references up again before deleting anything. Before a single message is sent, each one is
checked with the worker's own ownership rule (`deletion.domain.decision.check_ownership`) against
the ledger's custom metadata; a disagreement with the Spark attribution aborts the audit.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Protocol

from audit.errors import AuditError
from core.errors import JanitorError
from deletion.domain.decision import check_ownership
from deletion.domain.message import (
    LedgerComponent,
    LedgerKind,
    LedgerType,
    PendingDeleteLedgerInfo,
    of_kind,
)
from deletion.domain.ports import LedgerRecord
from deletion.domain.topics import NamespaceName, TopicName

AUDIT_PROPERTIES: Mapping[str, str] = {"origin": "ledger-janitor-audit"}
_KINDS = {kind.value: kind for kind in LedgerKind}  # an attributed `component` naming a kind


class Enqueuer(Protocol):
    """`producers.PhaseOne`: send all and wait, or raise EnqueueError."""

    def enqueue(self, infos: list[PendingDeleteLedgerInfo]) -> list[object]: ...


class OrphanRow(Protocol):
    ledger_id: int
    topic: str | None
    namespace: str | None
    component: str | None
    custom_metadata: Mapping[str, str] | None


def pending_deletion(row: OrphanRow) -> PendingDeleteLedgerInfo:
    """The message for one orphan, refused unless the worker would accept its ownership."""
    if row.topic is None or row.component is None or row.custom_metadata is None:
        raise AuditError(f"orphan {row.ledger_id} is not attributed")
    try:
        topic = TopicName.parse(row.topic)
        kind = _KINDS.get(row.component)  # a kind of its own: its component, and the property
        info = (
            of_kind(topic, kind, row.ledger_id, properties=AUDIT_PROPERTIES)
            if kind
            else PendingDeleteLedgerInfo(
                topic,
                LedgerComponent(row.component),
                LedgerType.LEDGER,
                row.ledger_id,
                check_ledger_still_in_use=True,
                properties=AUDIT_PROPERTIES,
            )
        )
    except (JanitorError, ValueError) as exc:
        raise AuditError(f"orphan {row.ledger_id}: {exc}") from exc
    if str(topic.namespace) != row.namespace:
        raise AuditError(f"orphan {row.ledger_id}: {topic} is not in namespace {row.namespace}")
    metadata = {key: value.encode("utf-8") for key, value in row.custom_metadata.items()}
    refused = check_ownership(info, LedgerRecord(row.ledger_id, metadata))
    if refused is not None:
        raise AuditError(f"attribution disagrees with the worker's rule: {refused.reason}")
    return info


def enqueue_orphans(
    phase_one: Enqueuer,
    rows: Iterable[OrphanRow],
    batch_size: int = 500,
    advance: Callable[[int], None] = lambda n: None,
    only: Collection[str] = (),
) -> int:
    """Check every orphan first, then send them in batches; returns how many were sent.

    A failed batch raises AuditError: what was sent before it stays sent, which is safe,
    since the worker re-checks each message and deletes only unreferenced ledgers.
    """
    infos = [pending_deletion(row) for row in rows]
    return send_all(phase_one, infos, batch_size, advance, only)


def send_all(
    phase_one: Enqueuer,
    infos: list[PendingDeleteLedgerInfo],
    batch_size: int = 500,
    advance: Callable[[int], None] = lambda n: None,
    only: Collection[str] = (),
) -> int:
    """Send each namespace's in batches, waiting for each; returns how many were sent.
    With `only` (deletionNamespaces: the namespaces the sidecars work), the others' are left.

    A namespace whose send fails (its deletion topic holds another producer's schema, its
    bundle's broker does not answer) keeps the rest of its orphans unsent and is named on a
    line of its own; the other namespaces are still sent. Then AuditError, if any failed."""
    by_namespace: dict[NamespaceName, list[PendingDeleteLedgerInfo]] = {}
    for info in infos:
        if only and str(info.topic_name.namespace) not in only:
            continue
        by_namespace.setdefault(info.topic_name.namespace, []).append(info)
    sent, refused = 0, []
    for namespace, theirs in by_namespace.items():
        done = 0
        for start in range(0, len(theirs), batch_size):
            batch = theirs[start : start + batch_size]
            try:
                phase_one.enqueue(batch)
            except JanitorError as exc:
                left = len(theirs) - done
                refused.append(f"  {namespace}: {left} not enqueued: {_first_reason(exc)}")
                break
            done += len(batch)
            advance(len(batch))
        sent += done
    if refused:
        raise AuditError(
            f"enqueued {sent} of {sum(map(len, by_namespace.values()))}; "
            f"{len(refused)} of {len(by_namespace)} namespaces refused:\n" + "\n".join(refused)
        )
    return sent


def _first_reason(exc: JanitorError) -> str:
    """One line: EnqueueError lists `<ledger>: <why>` a line, under a heading; the first why."""
    lines = str(exc).splitlines()
    if len(lines) > 1 and ": " in lines[1]:
        return lines[1].split(": ", 1)[1]
    return lines[0] if lines else type(exc).__name__
