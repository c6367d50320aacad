"""Phase one for orphaned offloaded copies: OFFLOAD_LEDGER messages with their context.

The context is a `ManagedLedgerInfo.LedgerInfo` as Pulsar records an offloaded ledger
(`deletion.wire.offload_context.offload_context`): the copy's UUID, `complete` (the copy is
older than the grace period: nothing is writing it), and the driver and its metadata as the
offloaders report them (BlobStoreManagedLedgerOffloader.getOffloadDriverMetadata: `bucket`,
`region`, `serviceEndpoint`; FileSystemManagedLedgerOffloader: `storageBasePath`), pointing
at the store the audit listed. The worker re-checks each (checkLedgerStillInUse=true: the
ledger and UUID must still be unreferenced) and deletes only objects whose own metadata names
the message's topic.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from rich.console import Console

from audit.enqueue import AUDIT_PROPERTIES, Enqueuer, send_all
from audit.errors import AuditError
from audit.offload.targets import FILESYSTEM, S3, OffloadTargets
from audit.offload.tiered import TieredAudit
from audit.progress import ScanProgress
from audit.units import plural
from config import ServiceConfiguration
from core.errors import JanitorError
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.topics import TopicName
from deletion.wire.offload_context import offload_context
from producers.opening import open_phase_one


def driver_of(targets: OffloadTargets, store: str) -> tuple[str, dict[str, str]]:
    """The driver name and metadata a context for an object of `store` carries."""
    if store == S3 and targets.s3 is not None:
        s3 = targets.s3
        properties = {
            "bucket": s3.bucket,
            "region": s3.region or "",
            "serviceEndpoint": s3.endpoint or "",
        }
        return s3.driver, properties
    if store == FILESYSTEM and targets.filesystem is not None:
        return "filesystem", {"storageBasePath": targets.filesystem.base_path}
    raise AuditError(f"no {store} offload storage is configured")


def pending_offload_deletion(row: Any, targets: OffloadTargets) -> PendingDeleteLedgerInfo:
    """The message for one orphaned copy; refused unless it names a topic exactly."""
    ledger_id, uuid = int(row["ledger_id"]), str(row["uuid"])
    if row["topic"] is None or row["managed_ledger"] is None:
        raise AuditError(f"offloaded ledger {ledger_id} ({uuid}) is not attributed")
    try:
        topic = TopicName.parse(row["topic"])
    except JanitorError as exc:
        raise AuditError(f"offloaded ledger {ledger_id}: {exc}") from exc
    named = (topic.managed_ledger_name, str(topic.namespace))
    if named != (row["managed_ledger"], row["namespace"]):
        raise AuditError(
            f"offloaded ledger {ledger_id}: {row['topic']} does not match {row['managed_ledger']}"
        )
    driver, properties = driver_of(targets, str(row["store"]))
    return PendingDeleteLedgerInfo(
        topic,
        LedgerComponent.MANAGED_LEDGER,
        LedgerType.OFFLOAD_LEDGER,
        ledger_id,
        offload_context(ledger_id, uuid, driver, properties),
        check_ledger_still_in_use=True,
        properties=AUDIT_PROPERTIES,
    )


def enqueue_offloaded(
    phase_one: Enqueuer,
    rows: Iterable[Any],
    targets: OffloadTargets,
    advance: Callable[[int], None] = lambda n: None,
    only: Collection[str] = (),
) -> int:
    """Check every copy first, then send (`only` these namespaces, if given); returns how
    many were sent."""
    infos = [pending_offload_deletion(row, targets) for row in rows]
    return send_all(phase_one, infos, advance=advance, only=only)


def enqueue_tiered_orphans(
    config: ServiceConfiguration,
    tiered: TieredAudit | None,
    targets: OffloadTargets | None,
    enqueue: bool,
    progress: ScanProgress,
    err: Console,
) -> int:
    """Enqueue the orphaned offloaded copies (OFFLOAD_LEDGER), or say how many a dry run found."""
    rows = tiered.orphan_rows() if tiered is not None else []
    if not rows or targets is None:
        return 0
    if not enqueue:
        found = plural(len(rows), "orphaned offloaded ledger")
        err.print(f"dry run: {found} found; --enqueue sends them")
        return 0
    with (
        open_phase_one(config) as parts,
        progress.counter("enqueueing offloaded orphans", len(rows)) as advance,
    ):
        sent = enqueue_offloaded(
            parts.phase_one, rows, targets, advance, only=config.deletion_namespaces
        )
    err.print(f"enqueued {plural(sent, 'orphaned offloaded ledger')} (the worker re-checks each)")
    return sent
