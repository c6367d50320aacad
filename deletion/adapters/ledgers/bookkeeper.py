"""LedgerStorage for a real BookKeeper: deleting a ledger is deleting its metadata znode.

That is all the Java client's deleteLedger does; bookies garbage-collect the entries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from deletion.domain.ports import (
    ANY_VERSION,
    Deletion,
    LedgerRecord,
    LedgerStorage,
    MetadataStore,
    Node,
)
from deletion.wire import bookkeeper_metadata as formats


class BookKeeperLedgerStorage(LedgerStorage):
    def __init__(self, store: MetadataStore, root: str = "/ledgers") -> None:
        self._store = store
        self._root = root

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        return self._record(ledger_id, self._store.get(self._path(ledger_id)))

    def ledgers(self, ledger_ids: Sequence[int]) -> dict[int, LedgerRecord | None]:
        nodes = self._store.get_many([self._path(ledger_id) for ledger_id in ledger_ids])
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
        return self._store.delete(self._path(ledger_id), expected_version)

    def delete_ledgers(self, versions: Mapping[int, int]) -> dict[int, Deletion]:
        ids = list(versions)
        outcomes = self._store.delete_many([(self._path(i), versions[i]) for i in ids])
        return dict(zip(ids, outcomes, strict=True))

    def close(self) -> None:
        self._store.close()
