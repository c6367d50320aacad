"""The cursor's znode, `/managed-ledgers/<managed ledger>/<cursor>`: a ManagedCursorInfo."""

from __future__ import annotations

from cursor.wire import (
    CursorInfoContent,
    compress,
    decode_cursor_info,
    decompress,
    encode_cursor_info,
)
from deletion.domain.ports import MetadataStore
from deletion.domain.topics import TopicName, managed_ledger_path
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType


class CursorMetadata:
    def __init__(
        self,
        store: MetadataStore,
        topic: TopicName,
        cursor: str,
        compression: CompressionType.ValueType = CompressionType.NONE,
    ) -> None:
        self._store = store
        self.path = f"{managed_ledger_path(topic)}/{cursor}"
        self._compression = compression

    def read(self) -> tuple[CursorInfoContent, int] | None:
        """The cursor info and its version; None when the cursor has no znode."""
        node = self._store.get(self.path)
        if node is None:
            return None
        plain, _ = decompress(node.data, self.path)
        return decode_cursor_info(plain, self.path), node.stat.version

    def create(self, info: CursorInfoContent) -> int:
        return self._store.create(self.path, self._encode(info)).version

    def compare_and_set(self, info: CursorInfoContent, version: int) -> int:
        """Write `info` if the znode is still at `version`; VersionConflictError otherwise."""
        return self._store.set(self.path, self._encode(info), version).version

    def points_at(self, ledger_id: int) -> bool:
        """Whether the znode now names `ledger_id` (to settle an ambiguous write)."""
        found = self.read()
        return found is not None and found[0].cursors_ledger_id == ledger_id

    def _encode(self, info: CursorInfoContent) -> bytes:
        return compress(encode_cursor_info(info), self._compression)
