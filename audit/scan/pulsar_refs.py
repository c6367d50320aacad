"""Every ledger one topic's Pulsar metadata references, with where the reference is.

Plain Python over the `MetadataStore` port, run inside Spark partitions: the rows of the
one reference walk the worker's in-use check uses too (`deletion.domain.references`), so the two
never disagree. Any read or decode error propagates: unreadable metadata is never "no
references".
"""

from __future__ import annotations

from deletion.domain import references as walk
from deletion.domain.ports import MetadataStore
from deletion.domain.topics import java_url_decode

ML_ROOT = "/managed-ledgers"
SCHEMA_ROOT = "/schemas"
# (ledger_id, topic, namespace, component, bookkeeper_deleted, offload_uuid, offload_complete,
#  offload_driver, offload_bucket, entries, size): schema.SCANNED_REFERENCE_SCHEMA
OffloadColumns = tuple[str | None, bool | None, str | None, str | None, int | None, int | None]
ReferenceRow = tuple[
    int, str, str, str, bool, str | None, bool | None, str | None, str | None, int | None,
    int | None,
]  # fmt: skip


def namespaces(store: MetadataStore) -> list[tuple[str, str]]:
    """(tenant, namespace) pairs that have managed ledgers or schemas."""
    found = {
        (tenant, namespace)
        for root in (ML_ROOT, SCHEMA_ROOT)
        for tenant in store.children(root)
        for namespace in store.children(f"{root}/{tenant}")
    }
    return sorted(found)


def topics(store: MetadataStore, tenant: str, namespace: str) -> list[tuple[str, str, str, str]]:
    """(root, tenant, namespace, encoded local name) for each managed ledger and schema."""
    managed = store.children(f"{ML_ROOT}/{tenant}/{namespace}/persistent")
    schemas = store.children(f"{SCHEMA_ROOT}/{tenant}/{namespace}")
    return [(ML_ROOT, tenant, namespace, name) for name in managed] + [
        (SCHEMA_ROOT, tenant, namespace, name) for name in schemas
    ]


def references(
    store: MetadataStore, root: str, tenant: str, namespace: str, encoded: str
) -> list[ReferenceRow]:
    if root == ML_ROOT:
        return managed_ledger_references(store, tenant, namespace, encoded)
    return schema_references(store, tenant, namespace, encoded)


def managed_ledger_references(
    store: MetadataStore, tenant: str, namespace: str, encoded: str
) -> list[ReferenceRow]:
    path = f"{ML_ROOT}/{tenant}/{namespace}/persistent/{encoded}"
    # Absent: deleted since it was listed, so its ledgers are no longer referenced.
    found = walk.managed_ledger_references(store, path) or []
    return _rows(found, tenant, namespace, encoded)


def schema_references(
    store: MetadataStore, tenant: str, namespace: str, encoded: str
) -> list[ReferenceRow]:
    path = f"{SCHEMA_ROOT}/{tenant}/{namespace}/{encoded}"
    return _rows(walk.schema_references(store, path) or [], tenant, namespace, encoded)


def _rows(
    found: list[walk.Reference], tenant: str, namespace: str, encoded: str
) -> list[ReferenceRow]:
    ns, topic = f"{tenant}/{namespace}", f"{tenant}/{namespace}/{java_url_decode(encoded)}"
    return [
        (ref.ledger_id, topic, ns, ref.holder.value, ref.bookkeeper_deleted, *_offload(ref))
        for ref in found
    ]


def _offload(ref: walk.Reference) -> OffloadColumns:
    o = ref.offload
    if o is None:
        return None, None, None, None, ref.entries, ref.size
    return o.uuid, o.complete, o.driver, o.bucket, ref.entries, ref.size
