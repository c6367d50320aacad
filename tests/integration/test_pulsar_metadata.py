"""MetadataInUseLedgers on real ZooKeeper and SQLite: Pulsar's layout, names and bad values."""

from __future__ import annotations

import re

import pytest

from core.clock import EpochSeconds
from core.errors import DecodeError
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter, MetadataInUseLedgers
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.ports import ANY_VERSION, MetadataStore, Node, Stat
from deletion.domain.references import (
    COMPACTED_LEDGER_PROPERTY,
    COMPACTION_CURSOR,
    DELAYED_BUCKET_PREFIX,
    Holder,
    Reference,
    managed_ledger_references,
    schema_references,
)
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path, schema_path
from deletion.wire.metadata_codec import MAGIC as COMPRESSION_MAGIC
from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from harness.janitor import Backend
from ledger_janitor.demo.seeding import TopicSeeder

NOW = EpochSeconds(4242.5)


def in_use(backend: Backend) -> MetadataInUseLedgers:
    return MetadataInUseLedgers(backend.metadata, clock=lambda: NOW)


def seeder(backend: Backend) -> TopicSeeder:
    return TopicSeeder(backend.metadata, backend.factory)


def test_ledgers_cursor_and_schema_ledgers_are_found(
    backend: Backend, namespace: NamespaceName
) -> None:
    seeded = seeder(backend).seed(TopicName(namespace, "orders"), ledgers=3, schema_versions=2)
    found = in_use(backend).fetch(seeded.topic)
    assert found.exists
    assert found.topic == seeded.topic
    assert found.fetched_at == NOW
    assert found.ledger_ids == frozenset(seeded.referenced())
    assert len(found.ledger_ids) == 3 + 1 + 2
    assert found.largest == max(seeded.referenced())


def test_every_cursor_counts(backend: Backend, namespace: NamespaceName) -> None:
    topic = TopicName(namespace, "orders")
    seeded = seeder(backend).seed(topic, ledgers=1)
    writer = ManagedLedgerWriter(backend.metadata)
    other = backend.factory.create_ledger(
        pulsar_custom_metadata(topic, LedgerComponent.MANAGED_CURSOR)
    )
    writer.write_cursor(topic, "second-subscription", other)
    found = in_use(backend).fetch(topic)
    assert found.ledger_ids == frozenset({*seeded.referenced(), other})


def test_a_name_that_needs_encoding_is_found_under_the_encoded_path(
    backend: Backend, namespace: NamespaceName
) -> None:
    topic = TopicName(namespace, "a b:c%d")
    seeded = seeder(backend).seed(topic, ledgers=2, schema_versions=1)
    encoded = f"/managed-ledgers/{namespace}/persistent/a+b%3Ac%25d"
    assert managed_ledger_path(topic) == encoded
    assert backend.metadata.get(encoded) is not None
    assert backend.metadata.get(f"/managed-ledgers/{namespace}/persistent/a b:c%d") is None
    assert backend.metadata.get(f"/schemas/{namespace}/a+b%3Ac%25d") is not None
    assert backend.metadata.get(f"/schemas/{namespace}/a b:c%d") is None
    found = in_use(backend).fetch(topic)
    assert found.exists
    assert found.ledger_ids == frozenset(seeded.referenced())


def test_metadata_under_the_raw_name_is_not_the_topics(
    backend: Backend, namespace: NamespaceName
) -> None:
    topic = TopicName(namespace, "e f:g")
    ManagedLedgerWriter(backend.metadata).ensure_namespace(namespace)  # the store holds it
    info = ManagedLedgerInfo()
    info.ledgerInfo.add(ledgerId=99)
    backend.metadata.create(
        f"/managed-ledgers/{namespace}/persistent/e f:g", info.SerializeToString()
    )
    found = in_use(backend).fetch(topic)
    assert not found.exists
    assert found.ledger_ids == frozenset()


def test_partitions_have_their_own_ledgers_but_share_the_schema(
    backend: Backend, namespace: NamespaceName
) -> None:
    base = TopicName(namespace, "p q")
    p0, p1 = TopicName(namespace, "p q-partition-0"), TopicName(namespace, "p q-partition-1")
    seeded0 = seeder(backend).seed(p0, ledgers=2)
    seeded1 = seeder(backend).seed(p1, ledgers=2)
    schema = backend.factory.create_ledger(
        pulsar_custom_metadata(base, LedgerComponent.SCHEMA_STORAGE)
    )
    ManagedLedgerWriter(backend.metadata).write_schema(base, [schema])
    assert schema_path(p0) == schema_path(p1) == schema_path(base) == (f"/schemas/{namespace}/p+q")

    found0, found1 = in_use(backend).fetch(p0), in_use(backend).fetch(p1)
    assert found0.ledger_ids == frozenset({*seeded0.referenced(), schema})
    assert found1.ledger_ids == frozenset({*seeded1.referenced(), schema})
    assert not found0.ledger_ids & set(seeded1.referenced())

    # The partitioned topic itself has no managed ledger, only the schema.
    found_base = in_use(backend).fetch(base)
    assert not found_base.exists
    assert found_base.ledger_ids == frozenset({schema})


def test_every_schema_version_counts(backend: Backend, namespace: NamespaceName) -> None:
    seeded = seeder(backend).seed(TopicName(namespace, "s"), ledgers=1, schema_versions=3)
    found = in_use(backend).fetch(seeded.topic)
    assert set(seeded.schema_ledgers) <= found.ledger_ids
    assert len(seeded.schema_ledgers) == 3


def test_absent_topic_does_not_exist(backend: Backend, namespace: NamespaceName) -> None:
    seeder(backend).seed(TopicName(namespace, "present"), ledgers=1)
    found = in_use(backend).fetch(TopicName(namespace, "absent"))
    assert not found.exists
    assert found.ledger_ids == frozenset()
    assert found.largest is None


def test_cursor_without_a_ledger_contributes_nothing(
    backend: Backend, namespace: NamespaceName
) -> None:
    topic = TopicName(namespace, "orders")
    seeded = seeder(backend).seed(topic, ledgers=1)
    ManagedLedgerWriter(backend.metadata).write_cursor(topic, "no-ledger", -1)
    node = backend.metadata.get(f"{managed_ledger_path(topic)}/no-ledger")
    assert node is not None
    assert ManagedCursorInfo.FromString(node.data).cursorsLedgerId == -1
    found = in_use(backend).fetch(topic)
    assert found.ledger_ids == frozenset(seeded.referenced())
    assert -1 not in found.ledger_ids


def test_ledger_zero_is_a_ledger(backend: Backend, namespace: NamespaceName) -> None:
    """BookKeeper's first ledger id is 0: a reference to it protects it like any other."""
    writer = ManagedLedgerWriter(backend.metadata)
    data, cursor, schema = (TopicName(namespace, name) for name in ("data", "cursor", "schema"))
    writer.write(data, [0, 7], None)
    writer.write(cursor, [7], None)
    writer.write_cursor(cursor, "sub", 0)
    writer.write(schema, [7], None)
    writer.write_schema(schema, [0])
    for topic in (data, cursor, schema):
        assert in_use(backend).fetch(topic).ledger_ids == {0, 7}, topic


class CursorDroppedWhileListed(MetadataStore):
    """The store under test, but a subscription is dropped (its cursor znode deleted) right
    after the managed ledger's cursors are listed, before they are read."""

    def __init__(self, store: MetadataStore, victim: str) -> None:
        self._store, self._victim = store, victim

    def get(self, path: str) -> Node | None:
        return self._store.get(path)

    def children(self, path: str) -> list[str]:
        names = self._store.children(path)
        if self._victim in names:
            assert self._store.delete(f"{path}/{self._victim}")
        return names

    def create(self, path: str, data: bytes) -> Stat:
        return self._store.create(path, data)

    def set(self, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        return self._store.set(path, data, expected_version)

    def delete(self, path: str, expected_version: int = ANY_VERSION) -> bool:
        return self._store.delete(path, expected_version)

    def close(self) -> None:
        pass  # the backend fixture closes the store


def test_a_cursor_dropped_between_listing_and_reading_drops_no_other(
    backend: Backend, namespace: NamespaceName
) -> None:
    topic = TopicName(namespace, "orders")
    seeded = seeder(backend).seed(topic, ledgers=1)
    writer = ManagedLedgerWriter(backend.metadata)
    writer.write_cursor(topic, "a-dropped", 40)
    writer.write_cursor(topic, "z-kept", 41)
    store = CursorDroppedWhileListed(backend.metadata, "a-dropped")
    found = MetadataInUseLedgers(store, clock=lambda: NOW).fetch(topic)
    assert found.ledger_ids == frozenset({*seeded.referenced(), 41})


def test_each_reference_says_what_holds_it(backend: Backend, namespace: NamespaceName) -> None:
    """What the audit reports: the holder, and whether an offloaded ledger's BookKeeper copy
    is already deleted (ManagedLedgerInfo's offload context)."""
    topic = TopicName(namespace, "tiered")
    info = ManagedLedgerInfo()
    info.ledgerInfo.add(ledgerId=1)
    offloaded = info.ledgerInfo.add(ledgerId=2).offloadContext
    offloaded.complete, offloaded.bookkeeperDeleted = True, True
    info.ledgerInfo.add(ledgerId=3).offloadContext.complete = True  # both copies exist
    path = managed_ledger_path(topic)
    backend.metadata.create(path, info.SerializeToString())
    writer = ManagedLedgerWriter(backend.metadata)
    writer.write_cursor(topic, "sub", 4)
    compaction = ManagedCursorInfo(cursorsLedgerId=5)
    compaction.properties.add(name=COMPACTED_LEDGER_PROPERTY, value=6)
    backend.metadata.create(f"{path}/{COMPACTION_CURSOR}", compaction.SerializeToString())
    delayed = ManagedCursorInfo(cursorsLedgerId=-1)
    delayed.cursorProperties.add(name=f"{DELAYED_BUCKET_PREFIX}_3_7", value="11")
    delayed.cursorProperties.add(name="#pulsar.internal.other", value="12")  # not a bucket
    backend.metadata.create(f"{path}/delayed", delayed.SerializeToString())
    writer.write_schema(topic, [8, 9])

    found = managed_ledger_references(backend.metadata, path)
    assert found is not None
    assert sorted(found, key=lambda ref: ref.ledger_id) == [
        Reference(1, Holder.MANAGED_LEDGER),
        Reference(2, Holder.MANAGED_LEDGER, bookkeeper_deleted=True),
        Reference(3, Holder.MANAGED_LEDGER),
        Reference(4, Holder.MANAGED_CURSOR),
        Reference(5, Holder.MANAGED_CURSOR),
        Reference(6, Holder.COMPACTED),
        Reference(11, Holder.DELAYED_BUCKET),
    ]
    assert schema_references(backend.metadata, schema_path(topic)) == [
        Reference(8, Holder.SCHEMA_STORAGE),
        Reference(9, Holder.SCHEMA_STORAGE),
    ]
    absent = TopicName(namespace, "absent")
    assert managed_ledger_references(backend.metadata, managed_ledger_path(absent)) is None
    assert schema_references(backend.metadata, schema_path(absent)) is None


def _naming(path: str, kind: str) -> str:
    """An error an operator can act on names the value and what it should have been."""
    return f"^{re.escape(path)}: (corrupt {kind}: |{kind} lacks required )"


def _corrupt_variants(valid: bytes) -> list[bytes]:
    return [
        b"\xff\xff\xff",  # wire type 7 does not exist
        b"\x00",  # field number 0 does not exist
        valid[:-1],  # truncated
        b"\x0a\x10\x08\x01",  # length beyond the end
    ]


@pytest.mark.parametrize("variant", range(4))
def test_corrupt_managed_ledger_info_is_a_decode_error(
    backend: Backend, namespace: NamespaceName, variant: int
) -> None:
    seeded = seeder(backend).seed(TopicName(namespace, "orders"), ledgers=2)
    path = managed_ledger_path(seeded.topic)
    node = backend.metadata.get(path)
    assert node is not None
    backend.metadata.set(path, _corrupt_variants(node.data)[variant])
    with pytest.raises(DecodeError, match=_naming(path, "ManagedLedgerInfo")):
        in_use(backend).fetch(seeded.topic)


@pytest.mark.parametrize("variant", range(4))
def test_corrupt_cursor_info_is_a_decode_error(
    backend: Backend, namespace: NamespaceName, variant: int
) -> None:
    seeded = seeder(backend).seed(TopicName(namespace, "orders"), ledgers=1)
    path = f"{managed_ledger_path(seeded.topic)}/sub"
    node = backend.metadata.get(path)
    assert node is not None
    backend.metadata.set(path, _corrupt_variants(node.data)[variant])
    with pytest.raises(DecodeError, match=_naming(path, "ManagedCursorInfo")):
        in_use(backend).fetch(seeded.topic)


@pytest.mark.parametrize("variant", range(4))
def test_corrupt_schema_locator_is_a_decode_error(
    backend: Backend, namespace: NamespaceName, variant: int
) -> None:
    seeded = seeder(backend).seed(TopicName(namespace, "orders"), ledgers=1, schema_versions=1)
    path = schema_path(seeded.topic)
    node = backend.metadata.get(path)
    assert node is not None
    backend.metadata.set(path, _corrupt_variants(node.data)[variant])
    with pytest.raises(DecodeError, match=_naming(path, "SchemaLocator")):
        in_use(backend).fetch(seeded.topic)


@pytest.mark.parametrize("where", ["managed-ledger", "cursor", "schema"])
def test_values_with_a_lying_compression_header_are_a_decode_error(
    backend: Backend, namespace: NamespaceName, where: str
) -> None:
    seeded = seeder(backend).seed(TopicName(namespace, "orders"), ledgers=1, schema_versions=1)
    path = {
        "managed-ledger": managed_ledger_path(seeded.topic),
        "cursor": f"{managed_ledger_path(seeded.topic)}/sub",
        "schema": schema_path(seeded.topic),
    }[where]
    node = backend.metadata.get(path)
    assert node is not None
    assert COMPRESSION_MAGIC == b"\x47\x78"
    backend.metadata.set(path, COMPRESSION_MAGIC + node.data)
    with pytest.raises(DecodeError, match=f"^{re.escape(path)}: .*compress"):
        in_use(backend).fetch(seeded.topic)


@pytest.mark.parametrize("where", ["managed-ledger", "cursor"])
def test_values_missing_required_fields_are_a_decode_error(
    backend: Backend, namespace: NamespaceName, where: str
) -> None:
    seeded = seeder(backend).seed(TopicName(namespace, "orders"), ledgers=2)
    if where == "managed-ledger":
        # ledgerInfo { entries: 5 } -- the required ledgerId is missing.
        path, value = managed_ledger_path(seeded.topic), bytes.fromhex("0a021005")
    else:
        # ManagedCursorInfo { lastActive: 1 } -- the required cursorsLedgerId is missing.
        path, value = f"{managed_ledger_path(seeded.topic)}/sub", bytes.fromhex("3001")
    backend.metadata.set(path, value)
    with pytest.raises(DecodeError, match=f"^{re.escape(path)}: .* lacks required"):
        in_use(backend).fetch(seeded.topic)


def test_the_creators_are_what_the_managed_ledger_and_each_cursor_record(
    backend: Backend, namespace: NamespaceName
) -> None:
    topic = TopicName(namespace, "orders")
    seeded = seeder(backend).seed(topic, ledgers=3, schema_versions=1)
    writer = ManagedLedgerWriter(backend.metadata)
    path = f"{managed_ledger_path(topic)}/no-ledger-yet"
    backend.metadata.create(path, ManagedCursorInfo(cursorsLedgerId=-1).SerializeToString())
    found = in_use(backend).fetch(topic)
    assert found.creators is not None
    assert found.creators.newest_data == max(seeded.ledgers)
    assert found.creators.cursors == {"sub": seeded.cursor_ledger, "no-ledger-yet": -1}
    writer.write(topic, [], found_version(backend, topic))
    emptied = in_use(backend).fetch(topic).creators
    assert emptied is not None and emptied.newest_data is None
    absent = in_use(backend).fetch(TopicName(namespace, "never"))
    assert absent.creators is not None and absent.creators.cursors == {}


def found_version(backend: Backend, topic: TopicName) -> int:
    node = backend.metadata.get(managed_ledger_path(topic))
    assert node is not None
    return node.stat.version


class TickingStore:
    """The store as seen from a clock that moves on with every read."""

    def __init__(self, store: MetadataStore) -> None:
        self._store, self.now = store, 1000.0

    def clock(self) -> EpochSeconds:
        return EpochSeconds(self.now)

    def get(self, path: str) -> Node | None:
        self.now += 1
        return self._store.get(path)

    def children(self, path: str) -> list[str]:
        self.now += 1
        return self._store.children(path)


def test_the_snapshot_time_is_taken_before_its_reads(
    backend: Backend, namespace: NamespaceName
) -> None:
    """fetched_at may only be earlier than what the snapshot shows, never later: a time
    taken after the reads would let a reference made meanwhile go unseen."""
    seeded = seeder(backend).seed(TopicName(namespace, "orders"), ledgers=2, schema_versions=1)
    ticking = TickingStore(backend.metadata)
    source = MetadataInUseLedgers(ticking, clock=ticking.clock)  # type: ignore[arg-type]
    assert source.fetch(seeded.topic).fetched_at == 1000.0
    assert ticking.now > 1000.0


def test_each_cursor_says_how_far_it_acknowledged_by_its_decoded_name(
    backend: Backend, namespace: NamespaceName
) -> None:
    """What a bucket snapshot ledger is judged on (deletion/domain/kinds.py): each cursor's
    mark-delete ledger as its znode has it, by the name a bucket ledger's metadata gives it
    (Pulsar stores a subscription's cursor under `Codec.encode` of its name)."""
    topic = TopicName(namespace, "delayed")
    writer = ManagedLedgerWriter(backend.metadata)
    writer.write(topic, [3, 4], None)
    path = managed_ledger_path(topic)
    acked = ManagedCursorInfo(cursorsLedgerId=9, markDeleteLedgerId=4, markDeleteEntryId=2)
    backend.metadata.create(f"{path}/sub+one%2Fa", acked.SerializeToString())
    fresh = ManagedCursorInfo(cursorsLedgerId=-1)  # no position recorded yet
    backend.metadata.create(f"{path}/fresh", fresh.SerializeToString())
    found = in_use(backend).fetch(topic)
    assert found.acked_through == {"sub one/a": 4, "fresh": -1}
    absent = in_use(backend).fetch(TopicName(namespace, "never"))
    assert absent.acked_through == {}  # no topic, no cursor: none can read a bucket
