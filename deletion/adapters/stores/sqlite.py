"""The embedded MetadataStore: ZooKeeper's data model (paths, versions, ctime) in SQLite."""

from __future__ import annotations

import time
from pathlib import Path

from core.errors import MetadataError, VersionConflictError
from deletion.adapters.embedded_db import EmbeddedDatabase
from deletion.domain.ports import ANY_VERSION, MetadataStore, Node, Stat

_SCHEMA = """
CREATE TABLE IF NOT EXISTS metadata_nodes (
    path TEXT PRIMARY KEY,
    parent TEXT NOT NULL,
    data BLOB NOT NULL,
    version INTEGER NOT NULL,
    ctime_ms INTEGER NOT NULL,
    mtime_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS metadata_nodes_parent ON metadata_nodes(parent);
"""


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _check_path(path: str) -> None:
    segments = path.split("/")[1:]
    bad = not path.startswith("/") or (path != "/" and not all(segments))
    if bad or any(segment in (".", "..") for segment in segments):
        raise MetadataError(f"invalid metadata path {path!r}")


class SqliteMetadataStore(MetadataStore):
    def __init__(self, path: str | Path, create: bool = True) -> None:
        """Without `create`, the file must already be an embedded metadata store."""
        self._db = EmbeddedDatabase(path, _SCHEMA, "metadata_nodes", "metadata", create)

    def get(self, path: str) -> Node | None:
        _check_path(path)
        with self._db.reading() as conn:
            row = conn.execute(
                "SELECT data, version, ctime_ms, mtime_ms FROM metadata_nodes WHERE path = ?",
                (path,),
            ).fetchone()
        return None if row is None else Node(bytes(row[0]), Stat(row[1], row[2], row[3]))

    def children(self, path: str) -> list[str]:
        _check_path(path)
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT path FROM metadata_nodes WHERE parent = ? ORDER BY path", (path,)
            ).fetchall()
        return [row[0].rsplit("/", 1)[1] for row in rows]

    def create(self, path: str, data: bytes) -> Stat:
        _check_path(path)
        now = int(time.time() * 1000)
        with self._db.transaction() as conn:
            if conn.execute("SELECT 1 FROM metadata_nodes WHERE path = ?", (path,)).fetchone():
                raise VersionConflictError(f"{path} already exists")
            missing, parent = [], _parent(path)
            while (
                parent != "/"
                and not conn.execute(
                    "SELECT 1 FROM metadata_nodes WHERE path = ?", (parent,)
                ).fetchone()
            ):
                missing.append(parent)
                parent = _parent(parent)
            for node in [*reversed(missing), path]:
                payload = data if node == path else b""
                conn.execute(
                    "INSERT INTO metadata_nodes VALUES (?, ?, ?, 0, ?, ?)",
                    (node, _parent(node), payload, now, now),
                )
        return Stat(0, now, now)

    def set(self, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        _check_path(path)
        now = int(time.time() * 1000)
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT version, ctime_ms FROM metadata_nodes WHERE path = ?", (path,)
            ).fetchone()
            if row is None:
                raise VersionConflictError(f"{path} does not exist")
            if expected_version not in (ANY_VERSION, row[0]):
                raise VersionConflictError(f"{path} is at version {row[0]}, not {expected_version}")
            conn.execute(
                "UPDATE metadata_nodes SET data = ?, version = ?, mtime_ms = ? WHERE path = ?",
                (data, row[0] + 1, now, path),
            )
        return Stat(row[0] + 1, row[1], now)

    def delete(self, path: str, expected_version: int = ANY_VERSION) -> bool:
        _check_path(path)
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT version FROM metadata_nodes WHERE path = ?", (path,)
            ).fetchone()
            if row is None:
                return False
            if expected_version not in (ANY_VERSION, row[0]):
                raise VersionConflictError(f"{path} is at version {row[0]}, not {expected_version}")
            if conn.execute(
                "SELECT 1 FROM metadata_nodes WHERE parent = ? LIMIT 1", (path,)
            ).fetchone():
                raise MetadataError(f"{path} has children")
            conn.execute("DELETE FROM metadata_nodes WHERE path = ?", (path,))
        return True

    def close(self) -> None:
        self._db.close()
