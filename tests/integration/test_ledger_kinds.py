"""Ledgers named by kind end to end (deletion/domain/kinds.py): named in phase one's message,
judged by the worker on each store, with the stores read raw as the oracle.

Delayed-delivery bucket snapshots: one a cursor property names is kept; an unnamed one (its
cursor put failed, so its tracker may still read it from memory) is kept until its
subscription acknowledges past the bucket's range; one whose subscription is gone is deleted.
Compacted ledgers: the one the `__compaction` cursor names is kept, and so is one no later
compaction was recorded above; a superseded one is deleted."""

from __future__ import annotations

from deletion.domain.message import LedgerKind, of_kind
from deletion.domain.outcome import Outcome
from deletion.domain.references import (
    COMPACTED_LEDGER_PROPERTY,
    COMPACTION_CURSOR,
    DELAYED_BUCKET_PREFIX,
)
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
    janitor.worker(recorder, max_reconsume_times_of_two_phase_deletion=30)  # never archived
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


def _compacted(janitor: JanitorFactory, topic: TopicName) -> int:
    """A compacted ledger as AbstractTwoPhaseCompactor makes it (its custom metadata)."""
    return janitor.backend.factory.create_ledger({
        "application": b"pulsar",
        "component": b"compacted-ledger",
        "pulsar/compactedTopic": topic.full_name.encode(),
        "pulsar/compactedTo": b"\x08\x01\x10\x00",
    })  # fmt: skip


def _compaction(mark: int, compacted: int) -> bytes:
    """The __compaction cursor's znode after a compaction recorded `compacted` at `mark`."""
    info = ManagedCursorInfo(cursorsLedgerId=-1, markDeleteLedgerId=mark, markDeleteEntryId=0)
    info.properties.add(name=COMPACTED_LEDGER_PROPERTY, value=compacted)
    return info.SerializeToString()


def test_a_compacted_ledger_goes_once_a_later_compaction_is_recorded_above_it(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    store, factory, recorder = janitor.backend.metadata, janitor.backend.factory, Recorder()
    truth = GroundTruth(store, factory)
    seeded = truth.seed(TopicName(namespace, "prices"), ledgers=1)
    topic = seeded.topic
    superseded = _compacted(janitor, topic)  # its deletion by the broker failed
    live = _compacted(janitor, topic)
    straggler = _compacted(janitor, topic)  # an interrupted compaction's, or one still running
    data = factory.create_ledger({"application": b"pulsar"})  # rolled over after them all
    cursor_path = f"{managed_ledger_path(topic)}/{COMPACTION_CURSOR}"
    # The live one was recorded at a position in a data ledger below the straggler's id.
    store.create(cursor_path, _compaction(live - 1, live))

    kind = LedgerKind.COMPACTED_LEDGER
    janitor.sidecar().phase_one.enqueue(
        [of_kind(topic, kind, ledger) for ledger in (superseded, live, straggler)]
    )
    janitor.worker(recorder, max_reconsume_times_of_two_phase_deletion=30)  # never archived
    recorder.wait_for(lambda rs: len(recorder.of(straggler)) >= 2 and len(recorder.of(live)) >= 2)
    alive = raw_for(janitor.backend).alive()
    # Recorded at a position below `superseded` too: kept, as the straggler and the live one.
    assert {superseded, live, straggler} <= alive
    assert Outcome.DELETED not in recorder.of(superseded) + recorder.of(live)

    # A later compaction records the straggler's successor at a position in `data`.
    node = store.get(cursor_path)
    assert node is not None
    successor = _compacted(janitor, topic)
    store.set(cursor_path, _compaction(data, successor), node.stat.version)
    recorder.wait_for(lambda rs: Outcome.DELETED in recorder.of(straggler))
    recorder.wait_for(lambda rs: Outcome.DELETED in recorder.of(superseded))
    alive = raw_for(janitor.backend).alive()
    assert not {superseded, straggler} & alive and successor in alive
    # `live` is no longer named either, and the position is above it: superseded too.
    recorder.wait_for(lambda rs: Outcome.DELETED in recorder.of(live))
    assert seeded.referenced() <= raw_for(janitor.backend).alive()
