"""The SQLite file behind the embedded adapters: one connection, serialized by a lock.

Opened with `create`, a missing file and its tables are made; without it, the file must
exist (SQLite's read-write mode, which makes nothing) and hold the adapter's table (its
layout): a wrong file is refused before anything is written to it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.errors import ConfigurationError, LayoutError


class EmbeddedDatabase:
    def __init__(
        self, path: str | Path, schema: str, table: str, what: str, create: bool = True
    ) -> None:
        """`table`: the one whose presence makes the file this adapter's store (`what`)."""
        self._conn = _connect(path, what, create)
        if not create and not _has_table(self._conn, table):
            self._conn.close()
            raise LayoutError(
                f"no {table} table in {path}: not an embedded {what} store (nothing is created)"
            )
        # WAL lets other processes (a sidecar, a test) read while one writes.
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.executescript(schema)
        self._lock = threading.Lock()

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; any exception rolls back and propagates."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _connect(path: str | Path, what: str, create: bool) -> sqlite3.Connection:
    # SQLite's read-write mode opens an existing file only; the default mode also creates.
    target = str(path) if create else Path(path).absolute().as_uri() + "?mode=rw"
    try:
        return sqlite3.connect(
            target, timeout=30, check_same_thread=False, isolation_level=None, uri=not create
        )
    except sqlite3.Error as exc:
        raise ConfigurationError(
            f"no embedded {what} store at {path} ({exc}; nothing is created)"
        ) from None


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    try:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
    except sqlite3.DatabaseError:  # not an SQLite file at all
        return False
    return found is not None
