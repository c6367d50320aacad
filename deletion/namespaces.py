"""The registry of namespaces that have a deletion topic, kept in the metadata store.

Phase one registers a namespace before its first send, so a worker that lists the
registry finds every deletion topic that may hold messages.
"""

from __future__ import annotations

import contextlib

from ledger_janitor.errors import VersionConflictError

from .ports import MetadataStore
from .topics import NamespaceName

REGISTRY_ROOT = "/ledger-janitor/deletion-namespaces"


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
