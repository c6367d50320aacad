"""Every ledger one topic's Pulsar metadata references, with where the reference is.

Plain Python over the `MetadataStore` port, run inside Spark partitions. The layout is the
one `deletion.pulsar_metadata` reads: `/managed-ledgers/<t>/<ns>/persistent/<encoded>`
(ManagedLedgerInfo, possibly behind Pulsar's compression header), one child per cursor
(ManagedCursorInfo; the `__compaction` cursor's `CompactedTopicLedger` property names the
compacted ledger) and `/schemas/<t>/<ns>/<encoded>` (SchemaLocator). Any read or decode
error propagates: unreadable metadata is never "no references".
"""

from __future__ import annotations

from deletion.ports import MetadataStore
from deletion.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from deletion.proto.schema_storage_format_pb2 import SchemaLocator
from deletion.pulsar_metadata import COMPACTED_LEDGER_PROPERTY, COMPACTION_CURSOR, parse
from deletion.topics import java_url_decode

from .schema import COMPACTED, MANAGED_CURSOR, MANAGED_LEDGER, SCHEMA_STORAGE

ML_ROOT = "/managed-ledgers"
SCHEMA_ROOT = "/schemas"
# (ledger_id, topic, namespace, component, bookkeeper_deleted)
ReferenceRow = tuple[int, str, str, str, bool]


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
    node = store.get(path)
    if node is None:  # deleted since it was listed: its ledgers are no longer referenced
        return []
    info = ManagedLedgerInfo()
    parse(info, node.data, path)
    ns, topic = f"{tenant}/{namespace}", f"{tenant}/{namespace}/{java_url_decode(encoded)}"
    rows: list[ReferenceRow] = [
        (
            ledger.ledgerId,
            topic,
            ns,
            MANAGED_LEDGER,
            ledger.HasField("offloadContext") and ledger.offloadContext.bookkeeperDeleted,
        )
        for ledger in info.ledgerInfo
    ]
    for cursor_name in store.children(path):
        cursor_path = f"{path}/{cursor_name}"
        cursor_node = store.get(cursor_path)
        if cursor_node is None:
            continue
        cursor = ManagedCursorInfo()
        parse(cursor, cursor_node.data, cursor_path)
        if cursor.cursorsLedgerId >= 0:
            rows.append((cursor.cursorsLedgerId, topic, ns, MANAGED_CURSOR, False))
        if cursor_name == COMPACTION_CURSOR:
            rows.extend(
                (p.value, topic, ns, COMPACTED, False)
                for p in cursor.properties
                if p.name == COMPACTED_LEDGER_PROPERTY
            )
    return rows


def schema_references(
    store: MetadataStore, tenant: str, namespace: str, encoded: str
) -> list[ReferenceRow]:
    path = f"{SCHEMA_ROOT}/{tenant}/{namespace}/{encoded}"
    node = store.get(path)
    if node is None:
        return []
    locator = SchemaLocator()
    parse(locator, node.data, path)
    ns, topic = f"{tenant}/{namespace}", f"{tenant}/{namespace}/{java_url_decode(encoded)}"
    entries = [locator.info, *locator.index]
    return sorted(
        {
            (entry.position.ledgerId, topic, ns, SCHEMA_STORAGE, False)
            for entry in entries
            if entry.HasField("position")
        }
    )
