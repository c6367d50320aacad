"""Delayed-delivery bucket snapshot ledgers end to end (deletion/domain/kinds.py): named by
kind in phase one's message, judged by the worker on each store, with the stores read raw as
the oracle. A bucket a cursor property names is kept; an unnamed one (its cursor put failed,
so its tracker may still read it from memory) is kept until its subscription acknowledges
past the bucket's range; one whose subscription is gone is deleted."""

from __future__ import annotations

from deletion.domain.message import LedgerKind, of_kind
from deletion.domain.outcome import Outcome
from deletion.domain.references import DELAYED_BUCKET_PREFIX
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path
from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo
from harness.janitor import JanitorFactory, Recorder
from tests.reliability.oracle import GroundTruth
from tests.reliability.scenario import raw_for


def _bucket(janitor: JanitorFactory, topic: TopicName, cursor: str, start: int, end: int) -> int:
    """A snapshot ledger as BookkeeperBucketSnapshotStorage makes it (its custom metadata)."""
    return janitor.backend.factory.create_ledger({
        "application": b"pulsar",
        "component": b"delayed-index-bucket",
        "pulsar/delayedIndexTopic": topic.full_name.encode(),
        "pulsar/delayedIndexCursor": cursor.encode(),
        "pulsar/delayedIndexBucketKey": f"{DELAYED_BUCKET_PREFIX}_{start}_{end}".encode(),
    })  # fmt: skip


def _cursor(mark: int, buckets: dict[str, int]) -> bytes:
    """A subscription's cursor znode: its mark-delete position and its buckets' properties."""
    info = ManagedCursorInfo(cursorsLedgerId=-1, markDeleteLedgerId=mark, markDeleteEntryId=0)
    for key, ledger in buckets.items():
        info.cursorProperties.add(name=key, value=str(ledger))
    return info.SerializeToString()


def test_a_bucket_goes_once_its_subscription_is_gone_or_acknowledged_past_it(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    store, recorder = janitor.backend.metadata, Recorder()
    seeded = GroundTruth(store, janitor.backend.factory).seed(
        TopicName(namespace, "delayed-partition-0"), ledgers=3
    )
    topic, (first, second, third) = seeded.topic, seeded.ledgers
    # Pulsar stores a subscription's cursor under its encoded name (Codec.encode); a bucket
    # ledger's metadata names it decoded.
    recorded = _bucket(janitor, topic, "delayed sub", first, second)
    unrecorded = _bucket(janitor, topic, "delayed sub", second, third)  # its cursor put failed
    orphaned = _bucket(janitor, topic, "gone", first, third)  # its subscription deleted
    cursor_path = f"{managed_ledger_path(topic)}/delayed+sub"
    key = f"{DELAYED_BUCKET_PREFIX}_{first}_{second}"
    store.create(cursor_path, _cursor(first, {key: recorded}))

    kind = LedgerKind.DELAYED_INDEX_BUCKET
    janitor.sidecar().phase_one.enqueue(
        [of_kind(topic, kind, ledger) for ledger in (recorded, unrecorded, orphaned)]
    )
    janitor.worker(recorder, max_reconsume_times_of_two_phase_deletion=10)
    recorder.wait_for(lambda rs: Outcome.DELETED in [r.outcome for r in rs])
    recorder.wait_for(lambda rs: len(recorder.of(unrecorded)) >= 2)
    alive = raw_for(janitor.backend).alive()
    assert orphaned not in alive and {recorded, unrecorded} <= alive
    assert recorder.of(orphaned) == [Outcome.DELETED]
    assert set(recorder.of(unrecorded)) == {Outcome.RECONSUMED}

    # The subscription acknowledges past the unrecorded bucket's range: nothing can read it.
    node = store.get(cursor_path)
    assert node is not None
    newer = janitor.backend.factory.create_ledger({"application": b"pulsar"})
    store.set(cursor_path, _cursor(newer, {key: recorded}), node.stat.version)
    recorder.wait_for(lambda rs: Outcome.DELETED in recorder.of(unrecorded))
    alive = raw_for(janitor.backend).alive()
    assert unrecorded not in alive and recorded in alive
    assert Outcome.DELETED not in recorder.of(recorded)
