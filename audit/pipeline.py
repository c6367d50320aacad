"""One audit run: scan (or read) the inventory and the references, classify, report.

Order and consistency: the inventory is scanned first and kept (persisted), then the
references. A ledger created between the two scans is young, so it is never an orphan; a
dangling candidate (referenced, not in the inventory) is looked up again in the ledger
store before it is reported, since it may have been created after the inventory scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as sf

from audit import files, offload_audit, transform
from audit.errors import AuditError, describe_failure
from audit.ledger_scan import ledger_inventory
from audit.offload_targets import OffloadTargets
from audit.progress import ScanProgress
from audit.reference_scan import metadata_references
from audit.report_data import write_html_report
from audit.schema import FOREIGN, ORPHAN, UNATTRIBUTABLE, YOUNG
from core.errors import DecodeError, JanitorError
from deletion.adapters.opening import StoreSpec
from deletion.domain.ports import LedgerStorage


@dataclass(frozen=True)
class AuditOptions:
    now_ms: int
    min_age_ms: int
    metadata: StoreSpec | None = None  # where Pulsar's metadata lives (references)
    ledgers: StoreSpec | None = None  # where the ledgers live (inventory, dangling re-check)
    inventory_file: Path | None = None
    references_file: Path | None = None
    output: Path | None = None
    offload: OffloadTargets | None = None  # tiered storage to audit too (None: not configured)


@dataclass
class AuditResult:
    ledgers: int
    referenced: int
    counts: dict[str, int]
    dangling_ids: list[int]
    summary: list[Row]
    classified: DataFrame
    dangling: DataFrame
    extra: dict[str, Any] = field(default_factory=dict)
    tiered: offload_audit.TieredAudit | None = None

    @property
    def orphans(self) -> int:
        return self.counts.get(ORPHAN, 0)

    def orphan_rows(self) -> Iterator[Row]:
        return (
            transform.orphans(self.classified).orderBy("namespace", "ledger_id").toLocalIterator()
        )

    def figures(self) -> dict[str, Any]:
        return {
            "ledgers": self.ledgers,
            "referenced": self.referenced,
            "orphans": self.orphans,
            "dangling": len(self.dangling_ids),
            "unattributable": self.counts.get(UNATTRIBUTABLE, 0),
            "foreign": self.counts.get(FOREIGN, 0),
            "young": self.counts.get(YOUNG, 0),
            **self.extra,
        }


def _inventory(spark: SparkSession, options: AuditOptions) -> DataFrame:
    if options.inventory_file is not None:
        return files.read_inventory(spark, options.inventory_file)
    if options.ledgers is None:
        raise AuditError("no ledger store to scan and no --inventory file")
    return ledger_inventory(spark, options.ledgers)


def _references(spark: SparkSession, options: AuditOptions) -> DataFrame:
    if options.references_file is not None:
        return files.read_references(spark, options.references_file)
    if options.metadata is None:
        raise AuditError("no metadata store to scan and no --references file")
    return metadata_references(spark, options.metadata)


def _materialize(frame: DataFrame, what: str) -> tuple[DataFrame, int]:
    """Persist and count: one consistent snapshot for everything that follows."""
    kept = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return kept, kept.count()
    except JanitorError:
        raise
    except Exception as exc:  # a task's error arrives wrapped by Spark
        raise AuditError(f"{what} failed, audit aborted: {describe_failure(exc)}") from exc


def _check_inventory(inventory: DataFrame) -> None:
    bad = inventory.where(sf.col("ledger_id").isNull() | (sf.col("ledger_id") < 0)).limit(1).count()
    if bad:
        raise AuditError("the inventory has rows without a valid ledger_id")


def confirm_dangling(candidates: list[int], storage: LedgerStorage | None) -> list[int]:
    """Drop candidates that exist after all (created after the inventory was scanned)."""
    if storage is None:
        return candidates
    return [ledger_id for ledger_id in candidates if not _exists(storage, ledger_id)]


def _exists(storage: LedgerStorage, ledger_id: int) -> bool:
    try:
        return storage.ledger(ledger_id) is not None
    except DecodeError:
        return True  # there, though its metadata does not decode


def run_audit(
    spark: SparkSession,
    options: AuditOptions,
    progress: ScanProgress,
    ledger_storage: LedgerStorage | None = None,
) -> AuditResult:
    """Classify every ledger; write the report if `options.output`. Enqueues nothing."""
    with progress.step("inventory: reading ledger metadata"):
        inventory, ledgers = _materialize(_inventory(spark, options), "the inventory scan")
        _check_inventory(inventory)
    # Listed before the references, like the inventory: see audit.offload_audit.
    objects = offload_audit.list_objects(spark, options, progress)
    with progress.step("references: reading Pulsar metadata"):
        references, reference_rows = _materialize(_references(spark, options), "the reference scan")
    if reference_rows == 0 and ledgers > 0:
        raise AuditError(
            f"no references at all, yet {ledgers} ledgers exist: wrong metadata store, chroot or "
            "file? Refusing to call every ledger an orphan"
        )
    with progress.step("classifying"):
        classified = transform.classify(inventory, references, options.now_ms, options.min_age_ms)
        classified = classified.persist(StorageLevel.MEMORY_AND_DISK)
        counts = transform.status_counts(classified)
        referenced = transform.distinct_ledgers(references)
        dangling = transform.dangling(references, inventory).persist(StorageLevel.MEMORY_AND_DISK)
        candidates = sorted({int(r["ledger_id"]) for r in dangling.select("ledger_id").collect()})
        summary = transform.summarize(classified)
        summary_rows = summary.collect()
    confirmed = confirm_dangling(candidates, ledger_storage)
    if len(confirmed) != len(candidates):
        dangling = dangling.where(sf.col("ledger_id").isin(confirmed))
    result = AuditResult(ledgers, referenced, counts, confirmed, summary_rows, classified, dangling)
    # --- tiered storage and the missing-data report (audit.offload_audit) ---
    with progress.step("tiered storage and missing data: classifying"):
        result.tiered = offload_audit.audit_tiered(objects, references, dangling, options)
    result.extra.update(result.tiered.figures())
    if options.output is not None:
        with progress.step(f"report: writing Parquet and HTML to {options.output}"):
            figures = {
                **result.figures(),
                "now_ms": options.now_ms,
                "min_age_ms": options.min_age_ms,
            }
            files.write_report(options.output, classified, dangling, summary, figures)
            offload_audit.write_tiered(options.output, result.tiered)
            write_html_report(
                options.output, figures, summary_rows, classified, dangling, result.tiered
            )
    return result
