"""Finding the namespaces to subscribe to: our registry and Pulsar's managed-ledger tree."""

from __future__ import annotations

from deletion.domain.namespaces import NamespaceRegistry, discover_deletion_namespaces
from deletion.domain.topics import NamespaceName
from harness.janitor import Backend


def test_registry_is_idempotent_and_shared_between_processes(backend: Backend) -> None:
    first, second = NamespaceRegistry(backend.metadata), NamespaceRegistry(backend.metadata)
    a, b = NamespaceName("acme", "orders"), NamespaceName("acme", "billing")
    first.register(a)
    second.register(a)
    second.register(b)
    assert sorted(first.namespaces()) == [b, a]


def test_deletion_topics_are_discovered_in_the_managed_ledger_tree(backend: Backend) -> None:
    layout = {
        "acme/orders": ["__ledger_deletion-partition-0", "__ledger_deletion-partition-3", "t"],
        "acme/quiet": ["t", "__ledger_deletion_archive", "__ledger_deletion-x-RETRY"],
        "beta/flat": ["__ledger_deletion"],
        "beta/empty": [],
    }
    for namespace, topics in layout.items():
        backend.metadata.create(f"/managed-ledgers/{namespace}", b"")
        for topic in topics:
            backend.metadata.create(f"/managed-ledgers/{namespace}/persistent/{topic}", b"")
    found = discover_deletion_namespaces(backend.metadata)
    assert sorted(found) == [NamespaceName("acme", "orders"), NamespaceName("beta", "flat")]


def test_nothing_to_discover_in_an_empty_store(backend: Backend) -> None:
    assert discover_deletion_namespaces(backend.metadata) == []
    assert NamespaceRegistry(backend.metadata).namespaces() == []
