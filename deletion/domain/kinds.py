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
  ledger, never lead it: a lagging one only keeps the ledger longer.
Either way the age rule still applies (decision.decide_age): a bucket being sealed right now
is young. A source that cannot read the cursors' znodes (the admin API) cannot tell.

**Compacted ledgers**: which one a topic reads is the `__compaction` cursor's property, in its
znode only once the cursor closes, and phase two of a compaction has no time-out: only the
topic's broker can tell a compaction's ledger in progress from a leftover. Refused for now
(archived, with the reason), never deleted.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

from deletion.domain.message import LedgerKind, PendingDeleteLedgerInfo
from deletion.domain.ports import LedgerRecord, TopicLedgers
from deletion.domain.references import DELAYED_BUCKET_PREFIX
from deletion.domain.topics import TopicName

BUCKET_TOPIC = "pulsar/delayedIndexTopic"
BUCKET_CURSOR = "pulsar/delayedIndexCursor"
BUCKET_KEY = "pulsar/delayedIndexBucketKey"
COMPACTED_TOPIC = "pulsar/compactedTopic"

COMPACTED_NOT_RECLAIMED = (
    "compacted ledgers are not reclaimed yet: only the topic's broker can tell a running "
    "compaction's ledger from a leftover"
)


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


def _bucket_end(key: str) -> int | None:
    """`end` of a bucket key `<prefix>_<start>_<end>` (Bucket.bucketKey); None if malformed."""
    prefix, _, rest = key.partition("_")
    start, _, end = rest.partition("_")
    if prefix != DELAYED_BUCKET_PREFIX or not start.isdigit() or not end.isdigit():
        return None
    return int(end)
