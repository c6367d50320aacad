"""One audit run: scan (or read) the inventory and the references, classify, report.

Order and consistency: the inventory is scanned first and kept (persisted), then the
references. A ledger created between the two scans is young, so it is never an orphan; a
dangling candidate (referenced, not in the inventory) is looked up again in the ledger
store before it is reported, since it may have been created after the inventory scan; one
still missing is then looked up again in its topic's metadata, since the topic may have
dropped it (trimmed, rolled over, deleted) after the reference scan. Missing from BookKeeper
first and referenced after is a reference to a ledger that is gone: BookKeeper never reuses an
id. (On a busy real broker both races showed: `tests/real_pulsar/test_busy_cluster.py`.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import StructType

from audit import compaction, transform
from audit.errors import AuditError, spark_job
from audit.id_words import MAX_BROADCAST_WORDS
from audit.offload import tiered as offload_audit
from audit.options import AuditOptions
from audit.progress import ScanProgress
from audit.report.data import write_html_report
from audit.scan import files
from audit.scan.files import REFERENCE_FILE_SCHEMA
from audit.scan.input_check import Scan, checked_rows
from audit.scan.ledgers import ledger_inventory
from audit.scan.local_rows import local_frame
from audit.scan.references import metadata_references
from audit.schema import (
    FOREIGN,
    INVENTORY_SCHEMA,
    ORPHAN,
    STATUSES,
    UNATTRIBUTABLE,
    UNKNOWN,
    YOUNG,
)
from audit.session import shuffle_partitions_for
from audit.tally import DANGLING, REFERENCED, referenced_words
from audit.tally import tally as one_job_tally
from audit.units import plural
from core.errors import DecodeError
from deletion.adapters.opening import StoreSpec
from deletion.domain.ports import LedgerStorage


@dataclass
class AuditResult:
    ledgers: int
    referenced: int
    counts: dict[str, int]
    dangling_ids: list[int]
    summary: list[Row]
    classify: Callable[[], DataFrame]  # `classified`, built when first read
    dangling: DataFrame
    extra: dict[str, Any] = field(default_factory=dict)
    tiered: offload_audit.TieredAudit | None = None

    @cached_property
    def classified(self) -> DataFrame:
        """Every unreferenced ledger with its status (`transform.classify`): planned only when
        the report or the enqueueing reads it (on a fresh JVM, a third of a second)."""
        return self.classify()

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
            "unknown": self.counts.get(UNKNOWN, 0),
            "orphans_by_component": self.orphans_by_component(),
            **self.extra,
        }

    def orphans_by_component(self) -> dict[str, int]:
        """Orphans per component, a kind of its own (message.LedgerKind) counted as such."""
        found: dict[str, int] = {}
        for row in self.summary:
            if row["status"] == ORPHAN:
                component = str(row["component"])
                found[component] = found.get(component, 0) + int(row["ledgers"])
        return dict(sorted(found.items()))


def _inventory(spark: SparkSession, options: AuditOptions) -> Scan:
    if options.inventory_file is not None:
        return Scan(files.read_inventory(spark, options.inventory_file))
    if options.ledgers is None:
        raise AuditError("no ledger store to scan and no --inventory file")
    return _snapshot(ledger_inventory(spark, options.ledgers))


def _references(spark: SparkSession, options: AuditOptions) -> Scan:
    if options.references_file is not None:
        return Scan(files.read_references(spark, options.references_file))
    if options.metadata is None:
        raise AuditError("no metadata store to scan and no --references file")
    return _snapshot(metadata_references(spark, options.metadata))


def _inventory_source(options: AuditOptions) -> str:
    if options.inventory_file is not None:
        return str(options.inventory_file)
    return f"ledger metadata from {_where(options.ledgers)}"


def _references_source(options: AuditOptions) -> str:
    if options.references_file is not None:
        return str(options.references_file)
    return f"Pulsar metadata from {_where(options.metadata)}"


def _where(spec: StoreSpec | None) -> str:
    """A store as its URL names it (no credentials: a digest is never part of it)."""
    if spec is None:
        return "no store"
    url = spec.url
    if url.scheme == "sqlite":
        return f"sqlite:{url.path}"
    if url.scheme == "etcd":
        return "etcd:" + ",".join(url.endpoints)
    return f"zk:{url.hosts}{url.chroot}"


def _snapshot(scan: Scan) -> Scan:
    """A scan is kept as first read (its first job fills the cache): the store keeps changing,
    and every later job must see one consistent state. A file is read where it is used; rows
    the driver read are that state already."""
    if scan.known is not None:
        return scan
    return Scan(scan.frame.persist(StorageLevel.MEMORY_AND_DISK))


def _count_inventory(inventory: Scan, options: AuditOptions) -> tuple[DataFrame, int]:
    """The ledgers, refusing malformed lines and rows without a valid id; one job, unless
    the driver read and counted them."""
    path, known = options.inventory_file, inventory.known
    checked, rows, _ = checked_rows(
        inventory.frame, "the inventory scan", path, INVENTORY_SCHEMA, known=known
    )
    return checked, rows


def _check_references(
    scan: Scan, ledgers: int, options: AuditOptions
) -> tuple[DataFrame, int, int]:
    """Refuse malformed lines, and an audit without any reference while ledgers exist; the
    references, their rows, and a bound on the 64-bit words their ids take (audit.id_words)."""
    path = options.references_file
    references, rows, span = checked_rows(
        scan.frame,
        "the reference scan",
        path,
        REFERENCE_FILE_SCHEMA,
        ids_required=False,
        known=scan.known,
    )
    if rows == 0 and ledgers > 0:
        raise AuditError(
            f"no references at all, yet {plural(ledgers, 'ledger')} exist: wrong metadata store, "
            "chroot or file? Refusing to call every ledger an orphan"
        )
    # A bound on the referenced ids' 64-bit words: no more than the rows, nor than the words
    # the ids' span covers (dense ids, as BookKeeper hands them out, span few).
    words = 0 if span is None else (span[1] >> 6) - (span[0] >> 6) + 1
    return references, rows, min(rows, words)


def _referenced_words(references: DataFrame, most_words: int) -> DataFrame | None:
    """The referenced ids as 64-bit words (audit.id_words), kept for the tally; None when
    they take too many words to broadcast (sparse ids: the tally's anti-joins). When they
    cannot be that many (`most_words`, from the references' check), no job counts them."""
    words = referenced_words(references).persist(StorageLevel.MEMORY_AND_DISK)
    if most_words <= MAX_BROADCAST_WORDS:
        return words
    if spark_job("the referenced ids", words.count) <= MAX_BROADCAST_WORDS:
        return words
    words.unpersist()
    return None


@dataclass(frozen=True)
class Tally:
    summary: list[Row]  # transform.summarize's rows
    summary_schema: StructType
    referenced: int  # distinct ledger ids
    dangling_candidates: list[int]


def _tally(
    inventory: DataFrame,
    references: DataFrame,
    options: AuditOptions,
    words: DataFrame | None,
    stale_compacted: frozenset[int],
) -> Tally:
    """The summary and the dangling candidates, from one job (`audit.tally`)."""
    frame = one_job_tally(
        inventory, references, options.now_ms, options.min_age_ms, words, stale_compacted
    )
    rows = spark_job("reading the inventory and the references", frame.collect)
    summary = [_summary_row(row) for row in rows if row["status"] in STATUSES]
    (referenced,) = (int(row["ledgers"]) for row in rows if row["status"] == REFERENCED)
    candidates = sorted(
        {int(i) for row in rows if row["status"] == DANGLING for i in row["dangling_ids"]}
    )
    schema = StructType([f for f in frame.schema.fields if f.name != "dangling_ids"])
    return Tally(summary, schema, referenced, candidates)


def _summary_row(row: Row) -> Row:
    return Row(**{k: v for k, v in row.asDict().items() if k != "dangling_ids"})


def status_counts(summary: list[Row]) -> dict[str, int]:
    """How many unreferenced ledgers have each status, from the summary's rows."""
    counts: dict[str, int] = {}
    for row in summary:
        counts[row["status"]] = counts.get(row["status"], 0) + int(row["ledgers"])
    return counts


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


def still_referenced(
    dangling: Sequence[tuple[int, str | None]],
    references_now: Callable[[str], frozenset[int]] | None,
) -> list[int]:
    """The ledgers some topic references still, read after they were found missing; without a
    way to read references now (they came from a file), or a topic to read them from, all."""
    if references_now is None:
        return sorted({ledger_id for ledger_id, _ in dangling})
    now: dict[str, frozenset[int]] = {}
    kept = set()
    for ledger_id, topic in dangling:
        if topic is None:
            kept.add(ledger_id)
            continue
        if topic not in now:
            try:
                now[topic] = references_now(topic)
            except Exception:  # unreadable or unparsable: unknown, so it stays reported
                now[topic] = frozenset(
                    {ledger_id for ledger_id, named in dangling if named == topic}
                )
        if ledger_id in now[topic]:
            kept.add(ledger_id)
    return sorted(kept)


def _dangling(
    spark: SparkSession,
    references: DataFrame,
    missing: list[int],
    references_now: Callable[[str], frozenset[int]] | None,
) -> tuple[list[int], DataFrame]:
    """The ledgers still missing and still referenced, and their references' rows: read once
    (a scan of the references, none when nothing is missing), kept as read for the report."""
    if not missing:
        return [], transform.dangling_among(references, [])  # plans no scan
    looked_up = transform.dangling_among(references, missing)
    rows = spark_job("the dangling references", looked_up.collect)
    confirmed = still_referenced([(row["ledger_id"], row["topic"]) for row in rows], references_now)
    kept = set(confirmed)
    found = [row for row in rows if row["ledger_id"] in kept]
    return confirmed, local_frame(spark, found, looked_up.schema)


def run_audit(
    spark: SparkSession,
    options: AuditOptions,
    progress: ScanProgress,
    ledger_storage: LedgerStorage | None = None,
    references_now: Callable[[str], frozenset[int]] | None = None,
    topic_reads: compaction.TopicReads | None = None,
) -> AuditResult:
    """Classify every ledger; write the report if `options.output`. Enqueues nothing.

    Three jobs when the inputs are files: the inventory's ids, the references' row count
    (Parquet's footers), then one job over both (the embedded store's rows the driver reads
    and counts: that one job alone) for the summary, the referenced count and
    the dangling candidates, which also fills the referenced ids as 64-bit words (kept, small
    when the ids are dense: audit.tally's choice); a fourth counts those words first when
    the references have more rows than may be broadcast. The per-ledger classification stays
    lazy: only the report and the enqueueing read it. `topic_reads`: a broker to ask which
    compacted ledger each topic reads (audit.compaction), one more job to find them; without
    one, an unreferenced one is UNKNOWN.
    """
    with ExitStack() as scope:
        with progress.step(f"inventory: reading {_inventory_source(options)}"):
            inventory, ledgers = _count_inventory(_inventory(spark, options), options)
        # Listed before the references, like the inventory: see audit.offload.tiered.
        objects = offload_audit.list_objects(spark, options, progress)
        with progress.step(f"references: reading {_references_source(options)}"):
            scan = _references(spark, options)
            references, reference_rows, most_words = _check_references(scan, ledgers, options)
        # Sized to the inputs from here on (a small audit: a task a stage, not 8); restored after.
        scope.enter_context(shuffle_partitions_for(spark, ledgers + reference_rows))
        verdicts = compaction.Verdicts([], frozenset(), 0)  # no broker: attribution says unknown
        if topic_reads is not None:
            with progress.step("compacted ledgers: asking their topics' brokers which they read"):
                now, age = options.now_ms, options.min_age_ms
                found = compaction.candidates(inventory, references, now, age)
                verdicts = compaction.ask(
                    spark_job("the compacted ledgers", found.collect), topic_reads
                )
        if verdicts.current:
            read = compaction.as_references(spark, verdicts.current)
            references = references.unionByName(read, allowMissingColumns=True)
        with progress.step("references: their ids"):
            words = _referenced_words(references, most_words + len(verdicts.current))
        how = "referenced ids as 64-bit words" if words is not None else "sparse ids: anti-joins"
        with progress.step(f"classifying ({how})"):
            try:
                tally = _tally(inventory, references, options, words, verdicts.stale)
            finally:
                if words is not None:
                    words.unpersist()  # small, but nothing else reads it
        confirmed, dangling = _dangling(
            spark,
            references,
            confirm_dangling(tally.dangling_candidates, ledger_storage),
            references_now,
        )
        classify = partial(
            transform.classify,
            inventory,
            references,
            options.now_ms,
            options.min_age_ms,
            verdicts.stale,
        )
        counts = status_counts(tally.summary)
        result = AuditResult(
            ledgers, tally.referenced, counts, confirmed, tally.summary, classify, dangling
        )
        # --- tiered storage and the missing-data report (audit.offload.tiered) ---
        with progress.step("tiered storage and missing data: classifying"):
            result.tiered = offload_audit.audit_tiered(objects, references, dangling, options)
        result.extra.update(result.tiered.figures())
        if options.output is not None:
            with progress.step(f"report: writing Parquet and HTML to {options.output}"):
                _write_report(spark, options.output, options, result, tally)
        return result


def _write_report(
    spark: SparkSession, output: Path, options: AuditOptions, result: AuditResult, tally: Tally
) -> None:
    figures = {**result.figures(), "now_ms": options.now_ms, "min_age_ms": options.min_age_ms}
    summary = spark.createDataFrame(tally.summary, tally.summary_schema)
    files.write_report(output, result.classified, result.dangling, summary, figures)
    if result.tiered is not None:
        offload_audit.write_tiered(output, result.tiered)
    write_html_report(
        output, figures, tally.summary, result.classified, result.dangling, result.tiered
    )
