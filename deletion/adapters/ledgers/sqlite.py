"""The embedded ledger store: ledgers, their entries and custom metadata in SQLite.

Ids come from AUTOINCREMENT, so like BookKeeper's they grow and are never reused, which
is what the in-use staleness rule relies on. Every real deletion is logged with its time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from core.errors import LedgerStorageError, VersionConflictError
from deletion.adapters.embedded_db import EmbeddedDatabase
from deletion.domain.ports import ANY_VERSION, LedgerRecord, LedgerStorage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledgers (
    ledger_id INTEGER PRIMARY KEY AUTOINCREMENT,
    ctime_ms INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'OPEN',
    version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ledger_custom_metadata (
    ledger_id INTEGER NOT NULL REFERENCES ledgers(ledger_id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (ledger_id, key)
);
CREATE TABLE IF NOT EXISTS ledger_entries (
    ledger_id INTEGER NOT NULL REFERENCES ledgers(ledger_id) ON DELETE CASCADE,
    entry_id INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (ledger_id, entry_id)
);
CREATE TABLE IF NOT EXISTS ledger_deletions (
    ledger_id INTEGER NOT NULL,
    deleted_at_ms INTEGER NOT NULL
);
"""


class SqliteLedgerStorage(LedgerStorage):
    def __init__(self, path: str | Path, create: bool = True) -> None:
        """Without `create`, the file must already be an embedded ledger store: its layout
        is its `ledgers` table, so a missing ledger there is gone."""
        self._db = EmbeddedDatabase(path, _SCHEMA, "ledgers", "ledger", create)

    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int:
        with self._db.transaction() as conn:
            cursor = conn.execute("INSERT INTO ledgers (ctime_ms) VALUES (?)", (_now_ms(),))
            ledger_id = int(cursor.lastrowid or 0)
            conn.executemany(
                "INSERT INTO ledger_custom_metadata VALUES (?, ?, ?)",
                [(ledger_id, key, value) for key, value in custom_metadata.items()],
            )
        return ledger_id

    def append(self, ledger_id: int, data: bytes) -> int:
        with self._db.transaction() as conn:
            state = conn.execute(
                "SELECT state FROM ledgers WHERE ledger_id = ?", (ledger_id,)
            ).fetchone()
            if state is None or state[0] != "OPEN":
                raise LedgerStorageError(f"ledger {ledger_id} is missing or closed")
            (entry_id,) = conn.execute(
                "SELECT COALESCE(MAX(entry_id), -1) + 1 FROM ledger_entries WHERE ledger_id = ?",
                (ledger_id,),
            ).fetchone()
            conn.execute("INSERT INTO ledger_entries VALUES (?, ?, ?)", (ledger_id, entry_id, data))
        return int(entry_id)

    def read(self, ledger_id: int, first: int = 0, last: int | None = None) -> list[bytes]:
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT data FROM ledger_entries WHERE ledger_id = ? AND entry_id >= ?"
                " AND (? IS NULL OR entry_id <= ?) ORDER BY entry_id",
                (ledger_id, first, last, last),
            ).fetchall()
        return [bytes(row[0]) for row in rows]

    def close_ledger(self, ledger_id: int) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "UPDATE ledgers SET state = 'CLOSED', version = version + 1 WHERE ledger_id = ?",
                (ledger_id,),
            )

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        with self._db.reading() as conn:
            row = conn.execute(
                "SELECT ctime_ms, version FROM ledgers WHERE ledger_id = ?", (ledger_id,)
            ).fetchone()
            metadata = conn.execute(
                "SELECT key, value FROM ledger_custom_metadata WHERE ledger_id = ?", (ledger_id,)
            ).fetchall()
        if row is None:
            return None
        return LedgerRecord(
            ledger_id=ledger_id,
            custom_metadata={key: bytes(value) for key, value in metadata},
            ctime_ms=row[0],
            version=row[1],
        )

    def ledger_ids(self) -> list[int]:
        with self._db.reading() as conn:
            return [row[0] for row in conn.execute("SELECT ledger_id FROM ledgers ORDER BY 1")]

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT version FROM ledgers WHERE ledger_id = ?", (ledger_id,)
            ).fetchone()
            if row is None:
                return False
            if expected_version not in (ANY_VERSION, row[0]):
                raise VersionConflictError(f"ledger {ledger_id} changed (version {row[0]})")
            conn.execute("DELETE FROM ledgers WHERE ledger_id = ?", (ledger_id,))
            conn.execute("INSERT INTO ledger_deletions VALUES (?, ?)", (ledger_id, _now_ms()))
        return True

    def deletions(self) -> list[tuple[int, int]]:
        """Every real deletion as (ledger id, time in ms), oldest first."""
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT ledger_id, deleted_at_ms FROM ledger_deletions ORDER BY rowid"
            ).fetchall()
        return [(row[0], row[1]) for row in rows]

    def close(self) -> None:
        self._db.close()


def _now_ms() -> int:
    return int(time.time() * 1000)
