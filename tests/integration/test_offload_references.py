"""The one reference walk says which offload each ledger names: its UUID, whether it is
complete, its driver and bucket, and the ledger's entries and size (the worker's in-use
snapshot and the audit both read them)."""

from __future__ import annotations

from core.clock import EpochSeconds
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.domain.references import Holder, OffloadRef, managed_ledger_references
from deletion.domain.topics import NamespaceName, TopicName, managed_ledger_path
from harness.janitor import Backend
from tests.integration.audit.tiered_planting import Ledger, Offload, write_managed_ledger

UID, OTHER = "123e4567-e89b-12d3-a456-426614174000", "ffffffff-0000-0000-8000-000000000002"


def test_offload_contexts_are_read_with_their_uuid(
    backend: Backend, namespace: NamespaceName
) -> None:
    topic = TopicName(namespace, "tiered")
    write_managed_ledger(
        backend.metadata,
        topic,
        [
            Ledger(1, Offload(UID, "aws-s3", {"bucket": "b", "region": ""}), entries=5, size=50),
            Ledger(2, Offload(OTHER, "filesystem", {}, complete=False)),
            Ledger(3),
        ],
    )
    found = managed_ledger_references(backend.metadata, managed_ledger_path(topic))
    assert found is not None
    by_id = {ref.ledger_id: ref for ref in found if ref.holder is Holder.MANAGED_LEDGER}
    assert by_id[1].offload == OffloadRef(UID, True, "aws-s3", "b")
    assert (by_id[1].entries, by_id[1].size) == (5, 50)
    assert by_id[2].offload == OffloadRef(OTHER, False, "filesystem", None)
    assert by_id[3].offload is None

    snapshot = MetadataInUseLedgers(backend.metadata, clock=lambda: EpochSeconds(1.0)).fetch(topic)
    assert snapshot.offload_uuids == {1: frozenset({UID}), 2: frozenset({OTHER})}
    assert snapshot.offload_referenced(1, UID) and snapshot.offload_referenced(2, OTHER)
    assert not snapshot.offload_referenced(1, OTHER)
    assert not snapshot.offload_referenced(3, UID)  # referenced, but never offloaded
    assert not snapshot.offload_referenced(9, UID)  # not referenced at all
