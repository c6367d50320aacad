"""The rules for the ledgers a pending deletion names by kind (message.LedgerKind): whose they
are, and when nothing can still read or record them. The data, cursor and schema ledgers'
rules are decision.py's; these are called from there.

**Delayed-delivery bucket snapshots** (Pulsar 4.0.8, pulsar-broker/src/main/java/org/apache/
pulsar/broker/delayed/bucket/): `BucketDelayedDeliveryTracker` seals the delayed messages of a
range of data ledgers `[start, end]` into a bucket; `Bucket.asyncSaveBucketSnapshot` writes its
snapshot to a new ledger (`BookkeeperBucketSnapshotStorage.createBucketSnapshot`: create,
write the segments, close; custom metadata `component=delayed-index-bucket`,
`pulsar/delayedIndexTopic`, `pulsar/delayedIndexCursor`, `pulsar/delayedIndexBucketKey` =
`#pulsar.internal.delayed.bucket_<start>_<end>`), then records it as that key's cursor property
(`putCursorProperty`: the cursor's znode, `cursorProperties`). If that put fails, the tracker
logs it and **keeps using the ledger from memory** (`bucket.setBucketId` came first) until it
is closed. So "no property names it" does not make a bucket ledger unused. What does: the
tracker exists for its subscription's cursor only, and reads a bucket only to deliver its
delayed messages, all of which lie in data ledgers `start..end`. Hence a bucket ledger that no
cursor property names is not read by anyone once
- its cursor is gone (the subscription deleted: the tracker is closed with its dispatcher; a
  subscription made again under the name starts from its own cursor's properties), or
- its cursor's mark-delete position is past `end` (every message of the range acknowledged:
  nothing is left to deliver from it). The znode's mark-delete position may lag the cursor's
  ledger, never lead it: a lagging one only keeps the ledger longer. On the real cluster it
  lags for as long as the cursor is open: 4.0.8 writes it to the znode when the cursor closes
  (an unload, a restart), and a cursor-ledger switch or `putCursorProperty` rewrites the znode
  with the old one (tests/cluster/test_bucket_snapshots.py: `7:-1` in the znode, `8:9` live).
Either way the age rule still applies (decision.decide_age): a bucket being sealed right now
is young. A source that cannot read the cursors' znodes (the admin API) cannot tell.

**Compacted ledgers** (pulsar-broker/src/main/java/org/apache/pulsar/compaction/
AbstractTwoPhaseCompactor.java): phase two creates the ledger (custom metadata
`component=compacted-ledger`, `pulsar/compactedTopic`), writes it, closes it, then records it
by a cumulative acknowledgement of the `__compaction` cursor at `lastReadId`, the last
message phase one read, carrying the property `CompactedTopicLedger` = the ledger. The topic
reads the ledger of the latest such acknowledgement. Phase two has no time-out, and a
compaction started on one broker acknowledges through the topic's owner of the moment, so
neither the age rule nor one broker's compaction status bounds it. What does: the cursor's
mark-delete position never moves back (ManagedCursorImpl.setAcknowledgedPosition refuses a
position below it), and `lastReadId` lies in a data ledger that existed when phase one read
it, so before the compacted ledger was created, so below its id (BookKeeper hands out ids in
increasing order). So a compacted ledger `C` that no reference names is never recorded, and
is not the one the topic reads, once the `__compaction` cursor's znode shows a later
compaction recorded (its `CompactedTopicLedger` names another ledger) at a mark-delete
position in a ledger **above `C`**: `C`'s own acknowledgement would be below it. The znode
may lag the cursor's ledger (its position is written when the cursor closes), never
lead it: a lagging one only keeps `C` longer. A topic without a `__compaction` cursor (never
compacted, compaction unsubscribed, or the topic deleted) records no compacted ledger; the
age rule still applies, as everywhere.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

from deletion.domain.message import LedgerKind, PendingDeleteLedgerInfo
from deletion.domain.ports import LedgerRecord, TopicLedgers
from deletion.domain.references import COMPACTION_CURSOR, DELAYED_BUCKET_PREFIX
from deletion.domain.topics import TopicName

BUCKET_TOPIC = "pulsar/delayedIndexTopic"
BUCKET_CURSOR = "pulsar/delayedIndexCursor"
BUCKET_KEY = "pulsar/delayedIndexBucketKey"
COMPACTED_TOPIC = "pulsar/compactedTopic"


def expected_items(topic: TopicName, kind: LedgerKind) -> tuple[tuple[str, str], ...]:
    """The custom metadata Pulsar writes on a ledger of `kind` for `topic` (LedgerMetadataUtils
    in managed-ledger/src/main/java/org/apache/bookkeeper/mledger/impl/: the topic in full)."""
    if kind is LedgerKind.COMPACTED_LEDGER:
        return (
            ("application", "pulsar"),
            ("component", "compacted-ledger"),
            (COMPACTED_TOPIC, topic.full_name),
        )
    return (
        ("application", "pulsar"),
        ("component", "delayed-index-bucket"),
        (BUCKET_TOPIC, topic.full_name),
    )


def cursor_name(znode_child: str) -> str:
    """A cursor's name as Pulsar decodes its znode's (`Codec.decode`: URLDecoder, `+` a space),
    which is how a bucket ledger's metadata names it."""
    return unquote_plus(znode_child)


def bucket_still_read(
    info: PendingDeleteLedgerInfo, record: LedgerRecord, snapshot: TopicLedgers
) -> str | None:
    """Why a bucket snapshot ledger that `snapshot` does not reference may still be read by its
    subscription's tracker, or None if it cannot be (see the module's docstring)."""
    ledger_id = info.ledger_id
    acked = snapshot.acked_through
    if acked is None:
        return (
            f"the in-use source cannot read {info.topic_name}'s cursors, which say whether "
            f"bucket ledger {ledger_id} may still be read"
        )
    cursor = record.metadata_text(BUCKET_CURSOR)
    key = record.metadata_text(BUCKET_KEY) or ""
    end = _bucket_end(key)
    if cursor is None or end is None:
        return f"bucket ledger {ledger_id} names no cursor or range ({BUCKET_KEY}={key!r})"
    through = acked.get(cursor)
    if through is None or through > end:
        return None  # the subscription is gone, or acknowledged past every message it holds
    return (
        f"subscription {cursor!r} of {info.topic_name} has acknowledged up to ledger {through}, "
        f"not past the bucket's range ending at {end}: its tracker may still read ledger "
        f"{ledger_id}"
    )


def compacted_still_recordable(info: PendingDeleteLedgerInfo, snapshot: TopicLedgers) -> str | None:
    """Why a compacted ledger that `snapshot` does not reference may still be recorded or read
    as its topic's compacted view, or None if it cannot be (see the module's docstring)."""
    ledger_id, topic = info.ledger_id, info.topic_name
    acked = snapshot.acked_through
    if acked is None:
        return f"the in-use source cannot read {topic}'s __compaction cursor"
    if COMPACTION_CURSOR not in acked:
        return None  # nothing records a compacted ledger for the topic
    mark, named = acked[COMPACTION_CURSOR], snapshot.compacted
    if named is None or named == ledger_id or mark <= ledger_id:
        return (
            f"the __compaction cursor of {topic} has recorded no later compaction at a position "
            f"above ledger {ledger_id} (its znode: compacted ledger {named}, acknowledged up to "
            f"ledger {mark}): a compaction that wrote it may still record it"
        )
    return None


def _bucket_end(key: str) -> int | None:
    """`end` of a bucket key `<prefix>_<start>_<end>` (Bucket.bucketKey); None if malformed."""
    prefix, _, rest = key.partition("_")
    start, _, end = rest.partition("_")
    if prefix != DELAYED_BUCKET_PREFIX or not start.isdigit() or not end.isdigit():
        return None
    return int(end)
