"""Compacted ledgers: whether its topic still reads one, which the metadata cannot say.

Pulsar's compactor writes each compacted ledger with `component=compacted-ledger` and
`pulsar/compactedTopic` (apache/pulsar `managed-ledger/src/main/java/org/apache/bookkeeper/
mledger/util/LedgerMetadataUtils.java`, buildMetadataForCompactedLedger). Which one the topic
reads, the `__compaction` cursor records as its `CompactedTopicLedger` property: in its
mark-delete entry, in the cursor's own ledger, and in the cursor's znode only once the
cursor closes. On a real broker just after a compaction the znode does not have it yet, and
an audit of znodes alone listed the live compacted ledger as unreferenced.

The broker knows (`internalStats`: `compactedLedger.ledgerId`). So each topic with an old
compacted ledger that no znode references is asked:
- its broker reads that ledger: a COMPACTED reference, as the cursor's znode would give;
- its broker reads another one, or none, or has no such topic: stale, unattributable (the
  protocol does not delete compacted ledgers; listed for the operator);
- no broker configured (`webServiceUrl`), or no answer: UNKNOWN, never "unreferenced".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from audit.attribution import COMPACTED_LEDGER
from audit.schema import COMPACTED, REFERENCE_SCHEMA
from audit.transform import old, unreferenced
from core.errors import JanitorError
from deletion.domain.kinds import COMPACTED_TOPIC  # LedgerMetadataUtils: the topic, in full
from deletion.domain.topics import TopicName

log = structlog.get_logger(__name__)


# The ledgers a topic's broker says it reads now (compacted ledger included); raises when
# it cannot say. AdminApiInUseLedgers.fetch, in the audit.
TopicReads = Callable[[TopicName], frozenset[int]]


@dataclass(frozen=True)
class Verdicts:
    current: list[tuple[int, str]]  # (ledger, `tenant/ns/local`): its topic's broker reads it
    stale: frozenset[int]  # its topic's broker reads another one, or none
    unknown: int  # asked of no broker, or not answered


def candidates(
    inventory: DataFrame, references: DataFrame, now_ms: int, min_age_ms: int
) -> DataFrame:
    """(ledger_id, topic): Pulsar's old compacted ledgers that no reference names."""
    meta = sf.col("custom_metadata")
    compacted = inventory.where(
        (sf.try_element_at(meta, sf.lit("application")) == "pulsar")
        & (sf.try_element_at(meta, sf.lit("component")) == COMPACTED_LEDGER)
        & old(now_ms, min_age_ms)
    )
    return unreferenced(compacted, references).select(
        "ledger_id", sf.try_element_at(meta, sf.lit(COMPACTED_TOPIC)).alias("topic")
    )


def ask(found: Iterable[tuple[int, str | None]], reads: TopicReads | None) -> Verdicts:
    """Ask each topic's broker once about its compacted ledgers in `found`."""
    by_topic: dict[str | None, list[int]] = defaultdict(list)
    for ledger_id, topic in found:
        by_topic[topic].append(ledger_id)
    current: list[tuple[int, str]] = []
    stale: set[int] = set()
    unknown = 0
    for topic, ledgers in sorted(by_topic.items(), key=lambda item: item[0] or ""):
        if reads is None or topic is None:
            unknown += len(ledgers)
            continue
        try:
            name = TopicName.parse(topic)
            now = reads(name)
        except JanitorError as exc:
            log.warning("could not ask whether a topic reads its compacted ledger",
                        topic=topic, ledgers=sorted(ledgers), error=str(exc))  # fmt: skip
            unknown += len(ledgers)
            continue
        current += [(ledger_id, str(name)) for ledger_id in ledgers if ledger_id in now]
        stale |= {ledger_id for ledger_id in ledgers if ledger_id not in now}
    return Verdicts(sorted(current), frozenset(stale), unknown)


def as_references(spark: SparkSession, current: list[tuple[int, str]]) -> DataFrame:
    """The ledgers brokers read as their topics' compacted ledgers, as references."""
    rows = [
        (ledger_id, topic, topic.rsplit("/", 1)[0], COMPACTED, False)
        for ledger_id, topic in current
    ]
    return spark.createDataFrame(rows, REFERENCE_SCHEMA)
