"""LedgerStorage for a real BookKeeper: deleting a ledger is deleting its metadata znode.

That is all the Java client's deleteLedger does; bookies garbage-collect the entries.

A ledger found missing is "gone" only while the store still holds BookKeeper's LAYOUT
(deletion.adapters.layout): a read of the ledgers reads LAYOUT in the same batch, after them;
a delete that finds a ledger gone reads LAYOUT next. Without it the answer is a LayoutError
(unknown), never "gone": a chroot wiped or a store swapped under a running sidecar must not
turn every pending deletion into "already gone".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from deletion.adapters.layout import LEDGERS_ROOT, layout_path, missing
from deletion.domain.ports import (
    ANY_VERSION,
    Deletion,
    LedgerRecord,
    LedgerStorage,
    MetadataStore,
    Node,
    Session,
)
from deletion.wire import bookkeeper_metadata as formats


class BookKeeperLedgerStorage(LedgerStorage):
    def __init__(
        self, store: MetadataStore, root: str = LEDGERS_ROOT, where: str = "the ledger store"
    ) -> None:
        """`where` names the store in errors, e.g. `ZooKeeper at zk1:2181/pulsar`."""
        self._store = store
        self._root = root
        self._layout = layout_path(root)
        self._where = where

    def verify_layout(self) -> None:
        """BookKeeper's LAYOUT is there, else LayoutError."""
        if self._store.get(self._layout) is None:
            raise missing(self._layout, self._where)

    def session(self) -> Session:
        return self._store.session()

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        return self.ledgers([ledger_id])[ledger_id]

    def ledgers(self, ledger_ids: Sequence[int]) -> dict[int, LedgerRecord | None]:
        """One batch: the ledgers' nodes, then LAYOUT (one multiRead on ZooKeeper)."""
        paths = [self._path(ledger_id) for ledger_id in ledger_ids]
        *nodes, layout = self._store.get_many([*paths, self._layout])
        if layout is None:
            raise missing(self._layout, self._where)
        return {i: self._record(i, node) for i, node in zip(ledger_ids, nodes, strict=True)}

    def _path(self, ledger_id: int) -> str:
        return formats.ledger_path(ledger_id, self._root)

    @staticmethod
    def _record(ledger_id: int, node: Node | None) -> LedgerRecord | None:
        if node is None:
            return None
        metadata = formats.decode(node.data)
        # Pulsar does not store ctime by default: the znode's creation time is the age.
        ctime = metadata.ctime if metadata.HasField("ctime") else node.stat.ctime_ms
        return LedgerRecord(
            ledger_id=ledger_id,
            custom_metadata=formats.custom_metadata(metadata),
            ctime_ms=ctime,
            version=node.stat.version,
        )

    def ledger_ids(self) -> Iterator[int]:
        """Every ledger in the hierarchical tree, skipping BookKeeper's own znodes."""
        buckets = [
            name for name in self._store.children(self._root) if not formats.is_reserved(name)
        ]
        stack = [f"{self._root}/{name}" for name in reversed(buckets)]
        while stack:
            path = stack.pop()
            relative = path[len(self._root) :]
            ledger_id = formats.ledger_id_of(relative)
            if ledger_id is not None:
                yield ledger_id
                continue
            if relative.count("/") < 5:
                children = self._store.children(path)
                stack.extend(f"{path}/{child}" for child in reversed(children))

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        deleted = self._store.delete(self._path(ledger_id), expected_version)
        if not deleted:
            self.verify_layout()
        return deleted

    def delete_ledgers(self, versions: Mapping[int, int]) -> dict[int, Deletion]:
        ids = list(versions)
        outcomes = self._store.delete_many([(self._path(i), versions[i]) for i in ids])
        if Deletion.GONE in outcomes:
            self.verify_layout()
        return dict(zip(ids, outcomes, strict=True))

    def close(self) -> None:
        self._store.close()
