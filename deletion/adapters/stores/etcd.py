"""The etcd MetadataStore (Pulsar's `etcd:` metadata store), through etcd's JSON gateway.

Pulsar's layout, from apache/pulsar `pulsar-metadata/src/main/java/org/apache/pulsar/metadata/
impl/EtcdMetadataStore.java` (and `AbstractMetadataStore.java` beside it):
- The key is the path itself in UTF-8: no prefix, no chroot. The URL is `etcd:` followed by
  the client URLs, comma-separated (`etcd:http://h1:2379,http://h2:2379`).
- A node's version is etcd's per-key `version` minus one: etcd counts 1 from each creation, so
  a new (or re-created) node is at 0. A versioned put or delete is one transaction comparing
  `version == expected + 1`; a create compares `create_revision == 0`.
- Children: one range read of the keys under `path + "/"` (keys only, by key), each cut at
  its first "/" and deduplicated. etcd has no parents, and Pulsar's etcd store creates none:
  a child may exist without its parent's key, and `get` of such a parent finds nothing.
- Its `Stat` has no creation time (0): etcd keeps revisions, not times. See etcd_revisions.
- Deleting a key with keys below it deletes that key alone.

Where this adapter departs from that, to meet the contract ZooKeeper and SQLite meet:
- `create` also creates missing parents as empty keys, in the same transaction (what Pulsar's
  ZooKeeper store does; Pulsar's etcd store reads them like any key).
- `delete` refuses a node with keys below it (etcd would orphan them), atomically: the
  transaction compares that no key exists below.
- `ctime_ms`/`mtime_ms` are the conservative times of `RevisionClock`, never 0.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import requests
from etcd3gw import exceptions
from etcd3gw.client import Etcd3Client

from config import StoreUrl
from core.clock import WallClock, wall_clock
from core.errors import MetadataError, TransientMetadataError, VersionConflictError
from deletion.adapters.stores import etcd_requests as req
from deletion.adapters.stores.etcd_revisions import RevisionClock
from deletion.domain.ports import ANY_VERSION, Deletion, MetadataStore, Node, Stat

# Keys per page when listing children: a page past a deep child skips the rest of its subtree.
CHILDREN_PAGE = 1000

_TRANSIENT = (exceptions.ConnectionFailedError, exceptions.ConnectionTimeoutError)


@contextmanager
def _translated(path: str) -> Iterator[None]:
    try:
        yield
    except requests.JSONDecodeError as exc:
        raise MetadataError(f"etcd answered nonsense at {path}: {exc}") from exc
    except (*_TRANSIENT, requests.RequestException) as exc:
        raise TransientMetadataError(f"etcd unavailable at {path}: {type(exc).__name__}") from exc
    except exceptions.Etcd3Exception as exc:
        raise MetadataError(f"etcd failed at {path}: {exc.detail_text or exc!r}") from exc
    except UnicodeDecodeError as exc:
        raise MetadataError(f"a key under {path} is not UTF-8: {exc}") from exc


class EtcdMetadataStore(MetadataStore):
    def __init__(
        self, endpoints: Sequence[str], timeout: float = 30.0, clock: WallClock = wall_clock
    ) -> None:
        if not endpoints:
            raise MetadataError("no etcd endpoint given")
        self._clients = [_client(endpoint, timeout) for endpoint in endpoints]
        self._current = 0
        self._revisions = RevisionClock(clock)

    @classmethod
    def connect(cls, url: StoreUrl, timeout: float = 15.0) -> EtcdMetadataStore:
        """Open the store on the first endpoint that answers; TransientMetadataError if none."""
        store = cls(url.endpoints, timeout)
        for _ in store._clients:
            try:
                store._request("/", "kv/range", {"key": req.key("/"), "count_only": True})
                return store
            except TransientMetadataError:
                continue  # the failure moved on to the next endpoint
        store.close()
        raise TransientMetadataError(f"no etcd endpoint answers: {', '.join(url.endpoints)}")

    def get(self, path: str) -> Node | None:
        req.check_path(path)
        return self._node(req.kvs(self._request(path, "kv/range", {"key": req.key(path)})))

    def children(self, path: str) -> list[str]:
        """Pulsar's listing, read in pages that skip whole subtrees: `/ledgers` holds a key
        per ledger, and listing its few buckets must not read them all."""
        req.check_path(path)
        prefix = req.below(path)
        end = req.range_end(prefix)
        start, names = prefix, set[str]()
        with _translated(path):
            while True:
                page = {"key": req.b64(start), "range_end": req.b64(end), "keys_only": True}
                reply = self._request(path, "kv/range", {**page, "limit": CHILDREN_PAGE})
                keys = [base64.b64decode(kv["key"])[len(prefix) :] for kv in req.kvs(reply)]
                names.update(key.split(b"/", 1)[0].decode("utf-8") for key in keys)
                if not reply.get("more") or not keys:
                    break
                name, slash, _ = keys[-1].partition(b"/")
                # Past "name/...", the next key not below `name` starts at "name0" ("/" + 1).
                start = prefix + (name + b"0" if slash else keys[-1] + b"\0")
        names.discard("")  # a key ending in "/" names no child
        return sorted(names)

    def create(self, path: str, data: bytes) -> Stat:
        req.check_path(path)
        txn = {
            "compare": [req.absent(path)],
            "success": [*map(req.create_if_missing, req.parents(path)), req.put(path, data)],
        }
        reply = self._request(path, "kv/txn", txn)
        if not reply.get("succeeded"):
            raise VersionConflictError(f"{path} already exists")
        created = self._revisions.time_of(int(reply["header"]["revision"]))
        return Stat(0, created, created)

    def set(self, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        req.check_path(path)
        txn = {
            "compare": [req.version_is(path, expected_version)],
            "success": [req.put(path, data, prev_kv=True)],
            "failure": [req.read(path, keys_only=True)],
        }
        reply = self._request(path, "kv/txn", txn)
        if not reply.get("succeeded"):
            current = req.kvs(reply["responses"][0])
            if not current:
                raise VersionConflictError(f"{path} does not exist")
            at = int(current[0]["version"]) - 1
            raise VersionConflictError(f"{path} is at version {at}, not {expected_version}")
        previous = reply["responses"][0]["response_put"]["prev_kv"]
        return Stat(
            version=int(previous["version"]),
            ctime_ms=self._revisions.time_of(int(previous["create_revision"])),
            mtime_ms=self._revisions.time_of(int(reply["header"]["revision"])),
        )

    def delete(self, path: str, expected_version: int = ANY_VERSION) -> bool:
        [outcome] = self.delete_many([(path, expected_version)])
        if outcome is Deletion.CHANGED:
            raise VersionConflictError(f"{path} is not at version {expected_version}")
        return outcome is Deletion.DELETED

    def get_many(self, paths: Sequence[str]) -> list[Node | None]:
        """One read-only transaction per MAX_TXN_OPS paths (etcd's default limit)."""
        for path in paths:
            req.check_path(path)
        nodes: list[Node | None] = []
        for first in range(0, len(paths), req.MAX_TXN_OPS):
            chunk = paths[first : first + req.MAX_TXN_OPS]
            reply = self._request(chunk[0], "kv/txn", {"success": [req.read(p) for p in chunk]})
            responses = reply.get("responses", [])
            if len(responses) != len(chunk):
                raise MetadataError(f"etcd answered {len(responses)} reads of {len(chunk)}")
            nodes.extend(self._node(req.kvs(response)) for response in responses)
        return nodes

    def delete_many(self, versions: Sequence[tuple[str, int]]) -> list[Deletion]:
        for path, _ in versions:
            req.check_path(path)
        outcomes: dict[int, Deletion] = {}
        for chunk in req.delete_chunks(versions):
            outcomes.update(self._delete_chunk({i: versions[i] for i in chunk}))
        return [outcomes[i] for i in range(len(versions))]

    def _delete_chunk(self, pending: dict[int, tuple[str, int]]) -> dict[int, Deletion]:
        """All-or-nothing transactions: when one compare fails, the failure branch's reads
        (at the same revision) say which deletes cannot happen, and the rest are retried.
        Each round settles at least one delete, so this ends."""
        settled: dict[int, Deletion] = {}
        while pending:
            items = list(pending.items())
            txn = {
                "compare": [
                    compare
                    for _, (path, version) in items
                    for compare in (req.version_is(path, version), req.nothing_below(path))
                ],
                "success": [{"request_delete_range": {"key": req.key(p)}} for _, (p, _) in items],
                "failure": [
                    read
                    for _, (path, _) in items
                    for read in (req.read(path, keys_only=True), req.first_below(path))
                ],
            }
            reply = self._request(items[0][1][0], "kv/txn", txn)
            if reply.get("succeeded"):
                settled.update(dict.fromkeys(pending, Deletion.DELETED))
                break
            responses = reply["responses"]
            for n, (i, (path, version)) in enumerate(items):
                current, below = req.kvs(responses[2 * n]), req.kvs(responses[2 * n + 1])
                if not current:
                    settled[i] = Deletion.GONE
                elif version != ANY_VERSION and int(current[0]["version"]) - 1 != version:
                    settled[i] = Deletion.CHANGED
                elif below:
                    raise MetadataError(f"{path} has children")
            if not settled.keys() & pending.keys():
                raise MetadataError(f"etcd refused deleting {items[0][1][0]} for no reason")
            pending = {i: item for i, item in pending.items() if i not in settled}
        return settled

    def _node(self, kvs: list[dict[str, Any]]) -> Node | None:
        if not kvs:
            return None
        kv = kvs[0]
        data = base64.b64decode(kv.get("value", ""))  # the gateway leaves out empty values
        return Node(
            data,
            Stat(
                version=int(kv["version"]) - 1,
                ctime_ms=self._revisions.time_of(int(kv["create_revision"])),
                mtime_ms=self._revisions.time_of(int(kv["mod_revision"])),
            ),
        )

    def _request(self, path: str, api: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """One call to the current endpoint; after a connection failure, the next call goes
        to the next one. Never retried here: a write may have been applied."""
        current = self._current
        client = self._clients[current]
        with _translated(path):
            try:
                reply: dict[str, Any] = client.post(client.get_url(api), json=payload)
            except (*_TRANSIENT, requests.RequestException):
                self._current = (current + 1) % len(self._clients)
                raise
        self._revisions.observe(reply.get("header", {}))
        return reply

    def close(self) -> None:
        for client in self._clients:
            client.session.close()


def _client(endpoint: str, timeout: float) -> Etcd3Client:
    parts = urlsplit(endpoint)
    if parts.hostname is None or parts.port is None:
        raise MetadataError(f"etcd endpoint {endpoint!r} is not scheme://host:port")
    # The gateway's path (/v3/ since etcd 3.4) is asked of the server on first use.
    return Etcd3Client(host=parts.hostname, port=parts.port, protocol=parts.scheme, timeout=timeout)
