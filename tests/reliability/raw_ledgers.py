"""Which ledgers still exist, read from the ledger store itself: kazoo on BookKeeper's
`/ledgers` tree, etcd's own JSON gateway on the same keys, or plain SQL on the embedded
store's file; never through the product's ledger adapters."""

from __future__ import annotations

import base64
import sqlite3
from typing import Protocol

import httpx
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


class RawLedgers(Protocol):
    def alive(self) -> set[int]: ...

    def deletions(self) -> list[int] | None:
        """Every real deletion, oldest first, where the store logs them."""
        ...


class SqliteLedgers:
    """The embedded ledger store's file, read with plain SQL on a connection of our own."""

    def __init__(self, path: str) -> None:
        self._path = path

    def _query(self, sql: str, *args: object) -> list[tuple[int, ...]]:
        conn = sqlite3.connect(self._path, timeout=30)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def alive(self) -> set[int]:
        return {row[0] for row in self._query("SELECT ledger_id FROM ledgers")}

    def deletions(self) -> list[int] | None:
        return [
            row[0] for row in self._query("SELECT ledger_id FROM ledger_deletions ORDER BY rowid")
        ]

    def bump_version(self, ledger_id: int) -> None:
        """Someone else changed the ledger's metadata (a recovery, a close)."""
        conn = sqlite3.connect(self._path, timeout=30, isolation_level=None)
        try:
            conn.execute(
                "UPDATE ledgers SET version = version + 1 WHERE ledger_id = ?", (ledger_id,)
            )
        finally:
            conn.close()


class ZooKeeperLedgers:
    """BookKeeper's ledger znodes, listed with kazoo: `/ledgers/00/0000/L0042` (2-4-4) and
    `/ledgers/000/0000/0000/0000/L0042` (3-4-4-4-4, ids from 2^31-1)."""

    def __init__(self, client: KazooClient, root: str = "/ledgers") -> None:
        self._client, self._root = client, root

    def _children(self, path: str) -> list[str]:
        try:
            return list(self._client.retry(self._client.get_children, path))
        except NoNodeError:
            return []

    def alive(self) -> set[int]:
        found: set[int] = set()
        stack: list[tuple[str, ...]] = [
            (name,) for name in self._children(self._root) if name.isdigit() and len(name) in (2, 3)
        ]
        while stack:
            parts = stack.pop()
            leaf = parts[-1]
            if leaf.startswith("L"):
                widths = [len(p) for p in parts[:-1]] + [len(leaf) - 1]
                if widths in ([2, 4, 4], [3, 4, 4, 4, 4]):
                    found.add(int("".join(parts[:-1]) + leaf[1:]))
                continue
            if len(parts) < 5:
                path = "/".join((self._root, *parts))
                stack.extend((*parts, child) for child in self._children(path))
        return found

    def deletions(self) -> list[int] | None:
        return None

    def exists(self, ledger_id: int) -> bool:
        return (
            self._client.retry(self._client.exists, ledger_znode(ledger_id, self._root)) is not None
        )


def ledger_of(parts: list[str]) -> int | None:
    """The ledger id of a path below `/ledgers` split at "/", if it is a ledger's node."""
    if not parts or not parts[-1].startswith("L"):
        return None
    widths = [len(p) for p in parts[:-1]] + [len(parts[-1]) - 1]
    digits = "".join(parts[:-1]) + parts[-1][1:]
    if widths in ([2, 4, 4], [3, 4, 4, 4, 4]) and digits.isdigit():
        return int(digits)
    return None


class EtcdLedgers:
    """The same `/ledgers/...` keys on etcd (Pulsar's etcd store keeps paths as keys), listed
    through etcd's own JSON gateway (`/v3/kv/range`), not the product's etcd adapter."""

    def __init__(self, endpoint: str, root: str = "/ledgers") -> None:
        self._endpoint, self._root = endpoint, root

    def _range(self, key: str, range_end: str | None = None) -> list[str]:
        body = {"key": _b64(key), "keys_only": True}
        if range_end is not None:
            body["range_end"] = _b64(range_end)
        reply = httpx.post(f"{self._endpoint}/v3/kv/range", json=body, timeout=30)
        reply.raise_for_status()
        return [base64.b64decode(kv["key"]).decode() for kv in reply.json().get("kvs", [])]

    def alive(self) -> set[int]:
        prefix = self._root + "/"
        keys = self._range(prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))
        found = (ledger_of(key[len(prefix) :].split("/")) for key in keys)
        return {ledger_id for ledger_id in found if ledger_id is not None}

    def deletions(self) -> list[int] | None:
        return None

    def exists(self, ledger_id: int) -> bool:
        return bool(self._range(ledger_znode(ledger_id, self._root)))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def ledger_znode(ledger_id: int, root: str = "/ledgers") -> str:
    if ledger_id < 2**31 - 1:
        d = f"{ledger_id:010d}"
        return f"{root}/{d[:2]}/{d[2:6]}/L{d[6:]}"
    d = f"{ledger_id:019d}"
    return f"{root}/{d[:3]}/{d[3:7]}/{d[7:11]}/{d[11:15]}/L{d[15:]}"


def raw_ledgers(metadata_url: str, client: KazooClient | None = None) -> RawLedgers:
    """The ledger store behind a backend's URL: `sqlite:<file>`, `etcd:<endpoint>` or
    ZooKeeper (then `client`)."""
    if metadata_url.startswith("sqlite:"):
        return SqliteLedgers(metadata_url.removeprefix("sqlite:"))
    if metadata_url.startswith("etcd:"):
        return EtcdLedgers(metadata_url.removeprefix("etcd:").split(",")[0])
    assert client is not None, "a kazoo client is needed for ZooKeeper"
    return ZooKeeperLedgers(client)
