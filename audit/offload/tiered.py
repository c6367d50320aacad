"""The tiered-storage part of an audit run, and the missing-data report, beside the ledgers'.

Order, as for the ledgers: the objects are listed (and kept) before the references are
scanned. Pulsar records an offload's UUID in the ledger's metadata before it writes a single
object under it (ManagedLedgerImpl.prepareLedgerInfoForOffloaded), so an object that was
listed had its UUID recorded before the references were read: a copy the references do not
name was superseded or dropped, never one whose recording the scan merely missed. A complete
offload whose objects were not listed may have been written after the listing: each such
candidate is looked for again before it is reported missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as sf

from audit.errors import spark_job
from audit.offload import classify
from audit.offload.scan import offloaded_objects
from audit.offload.verify import Presence
from audit.options import AuditOptions
from audit.progress import ScanProgress
from audit.schema import MISSING_BOOKKEEPER, MISSING_OFFLOADED, ORPHAN, UNATTRIBUTABLE, YOUNG
from deletion.adapters.offload import S3_DRIVERS


@dataclass
class TieredAudit:
    """What the audit found in tiered storage (`storage` None: none configured or skipped,
    `skipped` says why) and the missing-data report (BookKeeper and tiered storage)."""

    storage: str | None
    missing: DataFrame
    missing_rows: list[Row]
    skipped: str | None = None
    copies: int = 0
    referenced: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    classified: DataFrame | None = None
    summary: list[Row] = field(default_factory=list)

    def orphan_rows(self) -> list[Row]:
        if self.classified is None:
            return []
        orphans = self.classified.where(sf.col("status") == ORPHAN)
        return orphans.orderBy("namespace", "ledger_id", "uuid").collect()

    def figures(self) -> dict[str, Any]:
        # Ledgers, as the MISSING DATA block and the metric count them: a ledger that two
        # references name (two topics, or a topic and its cursor) is one ledger gone.
        missing = [what for what, _ in {(r["what"], r["ledger_id"]) for r in self.missing_rows}]
        return {
            "offloaded_copies": self.copies,
            "offload_orphans": self.counts.get(ORPHAN, 0),
            "offload_unattributable": self.counts.get(UNATTRIBUTABLE, 0),
            "offload_young": self.counts.get(YOUNG, 0),
            "missing_offloaded": missing.count(MISSING_OFFLOADED),
            "missing_bookkeeper": missing.count(MISSING_BOOKKEEPER),
        }


def _kept(frame: DataFrame, what: str) -> tuple[DataFrame, int]:
    kept = frame.persist(StorageLevel.MEMORY_AND_DISK)
    return kept, spark_job(what, kept.count)


def list_objects(
    spark: SparkSession, options: AuditOptions, progress: ScanProgress
) -> DataFrame | None:
    """The offloaded objects, listed and kept; None when no offload storage is configured, or
    the references come from a file (which holds no offload UUIDs to judge them by)."""
    targets = options.offload
    if targets is None or options.references_file is not None:
        return None
    with progress.step(f"tiered storage: listing {targets.describe()}"):
        objects, _ = _kept(offloaded_objects(spark, targets), "the tiered-storage listing")
    return objects


def audit_tiered(
    objects: DataFrame | None, references: DataFrame, dangling: DataFrame, options: AuditOptions
) -> TieredAudit:
    missing = classify.missing_bookkeeper(dangling, references)
    targets = options.offload
    if targets is not None and "offload_uuid" not in references.columns:
        why = "references read from a file carry no offload UUIDs; scan the metadata store"
        return _finish(TieredAudit(None, missing, [], skipped=why))
    if objects is None or targets is None:
        return _finish(TieredAudit(None, missing, []))
    now_ms, min_age_ms = options.now_ms, options.min_age_ms
    copies, count = _kept(classify.copies(objects), "grouping the offloaded objects")
    classified, _ = _kept(
        classify.classify_copies(copies, references, now_ms, min_age_ms), "classifying offloads"
    )
    gone = classify.missing_offloaded(
        references,
        copies,
        s3_bucket=targets.s3.bucket if targets.s3 else None,
        s3_drivers=S3_DRIVERS,
        filesystem=targets.filesystem is not None,
        default_driver=targets.default_driver,
    )
    present = Presence(targets)
    confirmed = [row for row in gone.collect() if not present(row)]
    gone_confirmed = gone.sparkSession.createDataFrame(confirmed, gone.schema)
    counted = classified.groupBy("status").count().collect()
    rows = {str(r["status"]): int(r["count"]) for r in counted}
    tiered = TieredAudit(
        targets.describe(),
        missing.unionByName(gone_confirmed),
        [],
        copies=count,
        referenced=count - sum(rows.values()),
        counts=rows,
        classified=classified,
        summary=_summary(classified).collect(),
    )
    return _finish(tiered)


def _finish(tiered: TieredAudit) -> TieredAudit:
    """Collected once (an alarm list is short); the frame is rebuilt from the rows, so that
    writing it reads nothing again and nothing is cached."""
    missing = tiered.missing
    ordered = missing.orderBy("what", "namespace", "ledger_id")
    tiered.missing_rows = spark_job("the missing-data report", ordered.collect)
    tiered.missing = missing.sparkSession.createDataFrame(tiered.missing_rows, missing.schema)
    return tiered


def _summary(classified: DataFrame) -> DataFrame:
    return (
        classified.groupBy("status", "store", "namespace")
        .agg(
            sf.count(sf.lit(1)).alias("copies"),
            sf.sum("bytes").alias("bytes"),
            sf.min("mtime_ms").alias("oldest_mtime_ms"),
        )
        .orderBy("status", "store", sf.col("namespace").asc_nulls_last())
    )


def write_tiered(output: Path, tiered: TieredAudit) -> None:
    """`offloaded/status=*/` (unreferenced copies) and `missing/` as Parquet."""
    output.mkdir(parents=True, exist_ok=True)
    if tiered.classified is not None:
        tiered.classified.write.mode("overwrite").partitionBy("status").parquet(
            str(output / "offloaded")
        )
    tiered.missing.coalesce(1).write.mode("overwrite").parquet(str(output / "missing"))
