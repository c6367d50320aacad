"""The `audit` command's body: configuration in, figures out (PySpark imported here)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console

from audit.compaction import TopicReads
from audit.enqueue import enqueue_orphans
from audit.errors import AuditError
from audit.offload.enqueue import enqueue_tiered_orphans
from audit.offload.report import print_tiered
from audit.offload.targets import offload_targets
from audit.options import AuditOptions
from audit.pipeline import AuditResult, run_audit
from audit.progress import ScanProgress
from audit.report.console import missing_ledgers, print_missing, print_report
from audit.report.page import REPORT_FILE
from audit.scan.files import check_input
from audit.schema import ORPHAN
from audit.session import open_session
from audit.units import plural
from config import ServiceConfiguration
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.opening import StoreSpec, open_ledger_storage, open_metadata_store
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.domain.topics import TopicName
from producers.opening import open_phase_one
from transport.admin_http import AdminHttp


def run_command(
    config: ServiceConfiguration,
    *,
    inventory: Path | None,
    references: Path | None,
    now_ms: int,
    min_age_ms: int,
    output: Path | None,
    enqueue: bool,
    spark_master: str | None,
    out: Console,
    err: Console,
) -> dict[str, Any]:
    started = time.monotonic()
    for given in (inventory, references):
        if given is not None:
            check_input(given)  # before Spark starts: a missing file is said in a second
    metadata = StoreSpec.metadata(config)
    ledgers = StoreSpec.ledgers(config)
    options = AuditOptions(
        now_ms=now_ms,
        min_age_ms=min_age_ms,
        metadata=None if references else metadata,
        ledgers=None if inventory else ledgers,
        inventory_file=inventory,
        references_file=references,
        output=output,
        offload=offload_targets(config),
    )
    with ExitStack() as stack:
        # The stores first, before Spark starts: each opening checks its layout (BookKeeper's
        # LAYOUT, Pulsar's roots), so a wrong store or chroot is said in a second.
        # Dangling candidates are looked up again only against the store that was scanned.
        storage = None
        if inventory is None:
            storage = open_ledger_storage(ledgers)
            stack.callback(storage.close)
        # ... and still missing ones against the metadata that referenced them, read again.
        references_now, topic_reads = None, None
        if references is None:
            store = open_metadata_store(metadata)
            stack.callback(store.close)
            references_now = _references_now(MetadataInUseLedgers(store, where=metadata.where))
            # Which compacted ledger each topic reads, only its broker knows (audit.compaction).
            http = AdminHttp.from_config(config)
            if http is not None:
                brokers = AdminApiInUseLedgers(http, schemas=store, where=metadata.where)
                stack.callback(brokers.close)
                topic_reads = _topic_reads(brokers)
        timings: dict[str, Any] = {"before_spark": round(time.monotonic() - started, 3)}
        try:
            session = open_session(spark_master)
        except Exception as exc:  # no Java, a bad master URL: PySpark raises many kinds
            raise AuditError(f"cannot start Spark: {exc}") from exc
        timings["spark_start"] = round(time.monotonic() - started - timings["before_spark"], 3)
        stack.callback(_timed, timings, "spark_stop", session.close)
        progress = ScanProgress(session.spark.sparkContext, err)
        timings["steps"] = progress.timings
        timings["jobs"] = progress.jobs
        result = run_audit(session.spark, options, progress, storage, references_now, topic_reads)
        print_report(out, result.summary)
        if result.tiered is not None:
            print_tiered(out, result.tiered)
            print_missing(out, result.tiered.missing_rows)
        if output is not None:
            out.print(f"report written to {output}; open {output / REPORT_FILE}", soft_wrap=True)
        enqueued = 0
        if enqueue and result.orphans:
            enqueued = _enqueue(config, result.orphan_rows(), result.orphans, progress)
            err.print(
                f"enqueued {plural(enqueued, 'orphan')} for deletion (the worker re-checks each)"
            )
            if config.deletion_namespaces:
                err.print(
                    f"deletionNamespaces: only {', '.join(config.deletion_namespaces)} enqueued; "
                    f"{plural(result.orphans - enqueued, 'orphan')} elsewhere left",
                    soft_wrap=True,
                )
        elif result.orphans:
            found = plural(result.orphans, "orphan")
            err.print(f"dry run: {found} found; --enqueue sends them to phase one")
        tiered, targets = result.tiered, options.offload
        offloaded = enqueue_tiered_orphans(config, tiered, targets, enqueue, progress, err)
        figures = result.figures()
        figures.update(
            reclaimable_bytes=reclaimable_bytes(result),
            missing_ledgers=len(missing_ledgers(tiered.missing_rows if tiered else [])),
            enqueued=enqueued,
            offload_enqueued=offloaded,
            dry_run=not enqueue,
            output=str(output) if output else None,
            # Where the time went (bench.audit_small): checks and stores before Spark, Spark's
            # start, each step and the Spark jobs it ran, Spark's stop (filled in as the
            # session closes, before printing).
            timings=timings,
        )
        return figures
    raise AssertionError("unreachable")


def _timed(timings: dict[str, Any], key: str, action: Callable[[], object]) -> None:
    began = time.monotonic()
    try:
        action()
    finally:
        timings[key] = round(time.monotonic() - began, 3)


def reclaimable_bytes(result: AuditResult) -> int:
    """The known bytes of the orphan ledgers and of the orphan offloaded copies."""
    ledgers = sum(int(r["bytes"] or 0) for r in result.summary if r["status"] == ORPHAN)
    tiered = result.tiered.summary if result.tiered is not None else []
    return ledgers + sum(int(r["bytes"] or 0) for r in tiered if r["status"] == ORPHAN)


def _enqueue(config: ServiceConfiguration, rows: Any, total: int, progress: ScanProgress) -> int:
    with (
        open_phase_one(config) as parts,
        progress.counter("enqueueing orphans", total) as advance,
    ):
        return enqueue_orphans(
            parts.phase_one, rows, advance=advance, only=config.deletion_namespaces
        )


def _topic_reads(brokers: AdminApiInUseLedgers) -> TopicReads:
    def read(topic: TopicName) -> frozenset[int]:
        return brokers.fetch(topic).ledger_ids

    return read


def _references_now(source: MetadataInUseLedgers) -> Callable[[str], frozenset[int]]:
    """The ledgers a topic (`tenant/namespace/local-name`) references now."""

    def read(topic: str) -> frozenset[int]:
        return source.fetch(TopicName.parse(topic)).ledger_ids

    return read
