"""Whether a store is the cluster's: BookKeeper's and Pulsar's own nodes, checked, never made.

A store that is not the one the cluster writes (a typo in a chroot, the wrong ZooKeeper)
answers every read with "no such node", which reads exactly like "deleted". So "already
gone" and "topic deleted" are only concluded where the store proves it holds the layout:

- BookKeeper's ledgers root with its `LAYOUT` node (`<root>/LAYOUT`, apache/bookkeeper
  `LedgerLayout.readLayout`, `BookKeeperConstants.LAYOUT_ZNODE`; written once by the first
  bookie or client, `PulsarLayoutManager.storeLedgerLayout` on Pulsar's metadata driver:
  `2\\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1`, as a Pulsar 4.0.8
  standalone holds it). It is checked when a store is opened, and again whenever a read or
  a delete finds a ledger missing (`BookKeeperLedgerStorage`).
- Pulsar's roots: `/admin` (apache/pulsar `BaseResources.BASE_POLICIES_PATH =
  "/admin/policies"`, `BASE_CLUSTERS_PATH = "/admin/clusters"`) and `/managed-ledgers`
  (managed-ledger `MetaStoreImpl.BASE_NODE`), checked when the metadata store is opened; and,
  before a topic counts as deleted, its namespace's policies node `/admin/policies/<tenant>/
  <namespace>` (`NamespaceResources.createPolicies`/`namespaceExists`), which Pulsar writes
  before any topic of the namespace and removes only with the namespace.

Pulsar keeps the policies in its configuration store (`configurationMetadataStoreUrl`), the
metadata store itself unless a cluster sets another one: there a topic of this metadata
store never counts as deleted (unknown, so archived in the end, never deleted).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import LayoutError
from deletion.domain.ports import MetadataStore
from deletion.domain.topics import NamespaceName, TopicName

LEDGERS_ROOT = "/ledgers"
LAYOUT_NODE = "LAYOUT"
# What BookKeeper's LedgerLayout.serialize writes for the hierarchical layout Pulsar uses.
BOOKKEEPER_LAYOUT = b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"
ADMIN_ROOT = "/admin"
POLICIES_ROOT = "/admin/policies"
MANAGED_LEDGERS_ROOT = "/managed-ledgers"
PULSAR_ROOTS = (ADMIN_ROOT, MANAGED_LEDGERS_ROOT)
WRONG_STORE = "wrong store or chroot? (nothing is created)"


def layout_path(root: str = LEDGERS_ROOT) -> str:
    return f"{root}/{LAYOUT_NODE}"


def policies_path(namespace: NamespaceName) -> str:
    return f"{POLICIES_ROOT}/{namespace.tenant}/{namespace.namespace}"


def missing(path: str, where: str) -> LayoutError:
    return LayoutError(f"no {path} in {where}: {WRONG_STORE}")


def first_missing(store: MetadataStore, paths: Sequence[str]) -> str | None:
    """The first of `paths` the store does not hold (one batched read), None if all are."""
    nodes = store.get_many(list(paths))
    return next((path for path, node in zip(paths, nodes, strict=True) if node is None), None)


def require_ledgers_layout(store: MetadataStore, where: str, root: str = LEDGERS_ROOT) -> None:
    """BookKeeper's LAYOUT under `root`, else LayoutError."""
    if store.get(layout_path(root)) is None:
        raise missing(layout_path(root), where)


def require_pulsar_layout(store: MetadataStore, where: str) -> None:
    """Pulsar's `/admin` and `/managed-ledgers` roots, else LayoutError."""
    absent = first_missing(store, PULSAR_ROOTS)
    if absent is not None:
        raise missing(absent, where)


def require_namespace(store: MetadataStore, topic: TopicName, where: str) -> None:
    """Read after `topic` was found absent: the store must hold its namespace (the roots
    and the policies node), else the absence proves nothing (LayoutError: unknown)."""
    absent = first_missing(store, [*PULSAR_ROOTS, policies_path(topic.namespace)])
    if absent is not None:
        raise LayoutError(
            f"{topic} is not in {where}, which has no {absent}: a wrong store or chroot, or a "
            "deleted namespace; unknown, so nothing of it is deleted"
        )
