"""ZooKeeper's read-only multi (`multiRead`, opcode 22, ZooKeeper 3.6 and later), which kazoo
does not offer: many getData operations in one request and one reply.

A scan that sends one request per znode pays, per read, a request through the server's
pipeline and, in kazoo, a wake-up of its connection thread (a socket write per request):
half of a pipelined scan's client time, and most of the server's 30-50 µs per read. One
multiRead of `OPS_PER_REQUEST` reads pays them once.

The shapes are the server's (apache/zookeeper): `MultiOperationRecord.serialize` (per op a
`MultiHeader(type, done=false, err=-1)` then its request record, ended by
`MultiHeader(-1, true, -1)`) and `MultiResponse.serialize` (per result a `MultiHeader(type,
false, err)` then `GetDataResponse(data, stat)`, or `ErrorResponse(err)` under type -1);
`FinalRequestProcessor` answers each read on its own, so a missing znode is an error result
(NONODE) beside the others' data. Requests and replies go through kazoo's own connection
(`KazooClient._call`), written and read as its serialization helpers would (inlined: a
request is built once a deletion, and once a znode of an audit's scan).

A server before 3.6 answers UNIMPLEMENTED, then closes the connection
(`UnimplementedRequestProcessor`; the reply is read before the close, and kazoo reconnects
the session). `MultiReader` sends one probing request first and, on that answer alone,
reads one znode per request on that connection, as before. Any other failure of the probe
is the stream's failure, as it would be for any request: a connection lost on the first
request does not make a server's multiRead unsupported.
"""

from __future__ import annotations

import functools
import logging
import re
import struct
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, MarshallingError, NoNodeError, UnimplementedError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.paths import _norm_root, _prefix_root
from kazoo.protocol.serialization import (
    GetData,
    MultiHeader,
    int_struct,
    multiheader_struct,
    stat_struct,
)
from kazoo.retry import KazooRetry

from deletion.domain.ports import Node, Stat

K = TypeVar("K")
log = logging.getLogger(__name__)
OPS_PER_REQUEST = 200  # reads per multiRead: ~8 KiB out, ~50 KiB back for ledger metadata
ERROR = -1  # ZooDefs.OpCode.error
_END = multiheader_struct.pack(-1, True, -1)
_GET_DATA_HEADER = MultiHeader(GetData.type, False, -1).serialize()
_INT = int_struct.size
_STAT = stat_struct.size
# Of a Stat (czxid, mzxid, ctime, mtime, version, ...), what a Node keeps.
_STAT_KEPT = struct.Struct(">16xqqi")
_NO_WATCH = b"\x00"

# One read's answer: the znode, or its error.
Reply = Node | Exception


class RequestFailedError(Exception):
    """A request failed as a whole (connection lost, timeout): `path` is its first read."""

    def __init__(self, path: str, cause: Exception) -> None:
        super().__init__(path, cause)
        self.path = path
        self.cause = cause


class MultiRead:
    """The request: a getData, without a watch, of each path (already under the chroot)."""

    type = 22  # ZooDefs.OpCode.multiRead

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def serialize(self) -> bytearray:
        """As kazoo's GetData(path, watch=None).serialize() would write each read, inlined:
        the request is built once a deletion and once a znode of an audit's scan."""
        out = bytearray()
        for path in self.paths:
            encoded = path.encode("utf-8")
            out += _GET_DATA_HEADER
            out += int_struct.pack(len(encoded))
            out += encoded
            out += _NO_WATCH
        out += _END
        return out

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> list[Reply]:
        replies: list[Reply] = []
        while True:
            kind, done, err = multiheader_struct.unpack_from(buffer, offset)
            offset += multiheader_struct.size
            if done:
                return replies
            if kind == ERROR:
                (err,) = int_struct.unpack_from(buffer, offset)
                offset += _INT
                replies.append(EXCEPTIONS[err]())
                continue
            (size,) = int_struct.unpack_from(buffer, offset)
            offset += _INT
            data = bytes(buffer[offset : offset + size]) if size > 0 else b""
            offset += max(size, 0)
            ctime, mtime, version = _STAT_KEPT.unpack_from(buffer, offset)
            replies.append(Node(data, Stat(version=version, ctime_ms=ctime, mtime_ms=mtime)))
            offset += _STAT


def multi_read_async(client: KazooClient, paths: list[str]) -> IAsyncResult:
    """One multiRead of `paths` (relative to the client's chroot), sent without waiting."""
    reply = client.handler.async_result()
    client._call(MultiRead(chrooted(client, paths)), reply)
    return reply


# An absolute path of non-empty components, none of them `.` or `..`: what kazoo's own
# normalization (`_prefix_root`) leaves as it is, as every ledger path is.
_NORMAL = re.compile(r"(?:/(?!\.\.?(?:/|$))[^/]+)+")


@functools.lru_cache(maxsize=64)
def _root(chroot: str) -> str:
    """The chroot as kazoo normalizes it: `/` without one."""
    return str(_norm_root(chroot))


def _under_chroot(root: str, chroot: str, path: str) -> str:
    if _NORMAL.fullmatch(path) is not None:
        return path if root == "/" else root + path
    try:
        return str(_prefix_root(chroot, path))
    except ValueError as exc:
        raise RequestFailedError(path, exc) from exc


def chrooted(client: KazooClient, paths: Iterable[str]) -> list[str]:
    """Each path under the client's chroot, as kazoo's requests put it (`_prefix_root`,
    which also refuses relative segments: RequestFailedError); a path already normal, as
    every ledger path is, is only prefixed, at a tenth of the cost, paid twice a deletion."""
    root = _root(client.chroot)
    return [_under_chroot(root, client.chroot, path) for path in paths]


class MultiReader:
    """Reads streamed by multiRead requests, `window` reads in flight; one znode per request
    on a server without multiRead."""

    def __init__(self, client: KazooClient, window: int, timeout: float) -> None:
        self._client = client
        self._window = max(1, window)
        # at least two requests in flight, so that one is answered while the next is read
        self._ops = max(1, min(OPS_PER_REQUEST, self._window // 2))
        self._timeout = timeout
        self.supported: bool | None = None  # learnt from the first request

    def stream(self, keyed: Iterable[tuple[K, str]]) -> Iterator[tuple[K, str, Reply]]:
        """Each `(key, path)` with its reply, in order."""
        pairs = iter(keyed)
        batches = iter(lambda: list(islice(pairs, self._ops)), [])
        if self.supported is None:
            first = next(batches, None)
            if first is None:
                return
            yield from self._probe(first)
        if not self.supported:
            yield from self._one_by_one(pair for batch in batches for pair in batch)
            return
        in_flight: deque[tuple[list[tuple[K, str]], IAsyncResult]] = deque()
        for batch in batches:
            in_flight.append((batch, multi_read_async(self._client, [p for _, p in batch])))
            if len(in_flight) >= self._window // self._ops:
                yield from self._settled(*in_flight.popleft())
        while in_flight:
            yield from self._settled(*in_flight.popleft())

    def _probe(self, batch: list[tuple[K, str]]) -> Iterator[tuple[K, str, Reply]]:
        reply = multi_read_async(self._client, [path for _, path in batch])
        try:
            replies = _awaited(batch, reply, self._timeout)
        except RequestFailedError as exc:
            if not isinstance(exc.cause, UnimplementedError):
                raise
            log.warning(
                "ZooKeeper did not answer a multiRead (%s; a server before 3.6?): reading"
                " one znode per request on this connection",
                type(exc.cause).__name__,
            )
            self.supported = False
            yield from self._reconnected(batch)
            return
        self.supported = True
        yield from _zipped(batch, replies)

    def _reconnected(self, batch: list[tuple[K, str]]) -> Iterator[tuple[K, str, Reply]]:
        """The probe's reads, the first retried until the connection the server closed is
        open again (a read sent before kazoo sees the close is lost with it)."""
        key, path = batch[0]
        retry = KazooRetry(max_tries=5, delay=0.05, deadline=self._timeout)
        try:
            data, stat = retry(self._client.get, path)
        except NoNodeError as exc:
            yield key, path, exc
        except Exception as exc:
            raise RequestFailedError(path, exc) from exc
        else:
            yield key, path, node_of(data, stat)
        yield from self._one_by_one(batch[1:])

    def _settled(
        self, batch: list[tuple[K, str]], reply: IAsyncResult
    ) -> Iterator[tuple[K, str, Reply]]:
        return _zipped(batch, _awaited(batch, reply, self._timeout))

    def _one_by_one(self, pairs: Iterable[tuple[K, str]]) -> Iterator[tuple[K, str, Reply]]:
        in_flight: deque[tuple[K, str, IAsyncResult]] = deque()
        for key, path in pairs:
            try:
                in_flight.append((key, path, self._client.get_async(path)))
            except ValueError as exc:
                raise RequestFailedError(path, exc) from exc
            if len(in_flight) >= self._window:
                yield _single(*in_flight.popleft(), self._timeout)
        while in_flight:
            yield _single(*in_flight.popleft(), self._timeout)


def _awaited(batch: list[tuple[K, str]], reply: IAsyncResult, timeout: float) -> list[Reply]:
    try:
        replies: list[Reply] = reply.get(timeout=timeout)
    except Exception as exc:
        raise RequestFailedError(batch[0][1], exc) from exc
    return replies


def _zipped(batch: list[tuple[K, str]], replies: list[Reply]) -> Iterator[tuple[K, str, Reply]]:
    if len(replies) != len(batch):
        wrong = MarshallingError(f"multiRead answered {len(replies)} reads of {len(batch)}")
        raise RequestFailedError(batch[0][1], wrong)
    return ((key, path, reply) for (key, path), reply in zip(batch, replies, strict=True))


def _single(key: K, path: str, reply: IAsyncResult, timeout: float) -> tuple[K, str, Reply]:
    try:
        data, stat = reply.get(timeout=timeout)
    except NoNodeError as exc:
        return key, path, exc
    except Exception as exc:
        raise RequestFailedError(path, exc) from exc
    return key, path, node_of(data, stat)


def stat_of(zstat: Any) -> Stat:
    """What a Node keeps of kazoo's ZnodeStat (as a multiRead's reply is read)."""
    return Stat(version=zstat.version, ctime_ms=zstat.ctime, mtime_ms=zstat.mtime)


def node_of(data: bytes | None, zstat: Any) -> Node:
    """kazoo's answer to a get, as a multiRead's reply gives it."""
    return Node(bytes(data or b""), stat_of(zstat))
