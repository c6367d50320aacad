"""Finding the namespaces that have a deletion topic.

Phase one registers a namespace in the metadata store before its first send, so a worker
that lists the registry finds every deletion topic we wrote to. Deletion topics written by
others are found in Pulsar's managed-ledger tree, where every persistent topic has a node.
"""

from __future__ import annotations

import contextlib

from core.errors import VersionConflictError
from deletion.domain.ports import MetadataStore
from deletion.domain.topics import DELETION_TOPIC, NamespaceName, TopicName

REGISTRY_ROOT = "/ledger-janitor/deletion-namespaces"
_ANY = NamespaceName("t", "ns")  # only the local name's partition suffix matters here


class NamespaceRegistry:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._known: set[NamespaceName] = set()

    def register(self, namespace: NamespaceName) -> None:
        if namespace in self._known:
            return
        path = f"{REGISTRY_ROOT}/{namespace.tenant}/{namespace.namespace}"
        if self._store.get(path) is None:
            # Another process may register it first; either way it is registered.
            with contextlib.suppress(VersionConflictError):
                self._store.create(path, b"")
        self._known.add(namespace)

    def namespaces(self) -> list[NamespaceName]:
        return [
            NamespaceName(tenant, namespace)
            for tenant in self._store.children(REGISTRY_ROOT)
            for namespace in self._store.children(f"{REGISTRY_ROOT}/{tenant}")
        ]


def discover_deletion_namespaces(store: MetadataStore) -> list[NamespaceName]:
    """Namespaces whose `/managed-ledgers/<tenant>/<ns>/persistent` holds a deletion topic."""
    found = []
    for tenant in store.children("/managed-ledgers"):
        for namespace in store.children(f"/managed-ledgers/{tenant}"):
            topics = store.children(f"/managed-ledgers/{tenant}/{namespace}/persistent")
            if any(_is_deletion_topic(topic) for topic in topics):
                found.append(NamespaceName(tenant, namespace))
    return found


def _is_deletion_topic(encoded_local_name: str) -> bool:
    # The partitioned topic or one of its partitions; the archive and retry topics differ.
    return TopicName(_ANY, encoded_local_name).base.local_name == DELETION_TOPIC
