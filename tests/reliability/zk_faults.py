"""Faults inside ZooKeeper's pipelined batches, below our adapter, and a ground-truth view of
the ledger znodes that reads the server directly.

`FaultyKazoo` is a real kazoo client talking to a real server. Only its `get_async`,
`delete_async` and the multiRead and multi requests it is handed (`_call`) are intercepted:
what our adapter sends for `get`, `get_many` and `delete_many`. Every request of a batch is
issued before the first reply is awaited, so the requests issued between two awaits form
one *burst*, and each knows its place in it; each read of a multiRead is a "get" of the
burst and each delete of a multi a "delete", and a fault planned for any of them befalls
the whole request, which fails or succeeds as one. A plan picks, per request, a fault; the
adapter's own batching and error collection run unchanged on whatever kazoo hands back.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from kazoo.protocol.serialization import Delete, Transaction

from deletion.adapters.stores.zookeeper_multiread import MultiRead
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat


@dataclass(frozen=True)
class Request:
    op: str  # "get" or "delete"
    path: str
    index: int  # 1-based place in its burst
    burst: int  # bursts of this client, counted from 1


@dataclass
class Issued:
    request: Request
    fault: str | None
    outcome: str = "unread"  # "ok", the exception's name, "unread", or "unsent"


class Crash(BaseException):
    """The worker dies here: nothing in the product may catch it."""


Send = Callable[[], Any]  # issues the request for real; returns kazoo's async result
Fault = Callable[["FaultyKazoo", Request, Send], Any]
Plan = Callable[[Request], Fault | None]


def refused(client: FaultyKazoo, request: Request, send: Send) -> Any:
    """The request never leaves: as when the connection is already gone."""
    reply = client.handler.async_result()
    reply.set_exception(ConnectionLoss())
    return reply


def reply_lost(client: FaultyKazoo, request: Request, send: Send) -> Any:
    """The server applies the request; its reply is lost on the way back."""
    real, lost = send(), client.handler.async_result()
    real.rawlink(lambda _: lost.set_exception(ConnectionLoss()))
    return lost


def connection_dropped(client: FaultyKazoo, request: Request, send: Send) -> Any:
    """Issued; then the TCP connection breaks under whatever of the burst is in flight.
    kazoo fails those with ConnectionLoss and reconnects on the same session."""
    client.wait_connected()
    reply = send()
    client._connection._socket.shutdown(socket.SHUT_RDWR)
    return reply


def session_expired(server_hosts: str) -> Fault:
    """Issued; then the session is closed from a second client that joins it, as the server
    does when a partition outlasts the session time-out, and kazoo starts a new session.
    The request's reply is lost with the session: a reply the server sent before the close
    (a whole batch is one request, often answered before the close) is not read."""

    def fault(client: FaultyKazoo, request: Request, send: Send) -> Any:
        client.wait_connected()
        real, lost = send(), client.handler.async_result()
        session_id, password = client.client_id
        twin = KazooClient(hosts=server_hosts, client_id=(session_id, password))
        twin.start(timeout=15)
        twin.stop()
        twin.close()
        real.rawlink(lambda _: lost.set_exception(SessionExpiredError()))
        return lost

    return fault


def crash_after_applied(client: FaultyKazoo, request: Request, send: Send) -> Any:
    """Dies before issuing this request, once the server has applied the burst's earlier
    ones (a sync on the same session is answered after them): their replies go unread."""
    client.sync("/")
    raise Crash(f"crashed before {request.op} #{request.index} of burst {request.burst}")


def crash_after_sent(client: FaultyKazoo, request: Request, send: Send) -> Any:
    """Issues the request and dies once the server has applied it, its reply unread."""
    send()
    client.sync("/")
    raise Crash(f"crashed after {request.op} #{request.index} of burst {request.burst}")


def after(action: Callable[[Request], None]) -> Fault:
    """Runs `action` (another client's write, say), then issues the request unharmed."""

    def fault(client: FaultyKazoo, request: Request, send: Send) -> Any:
        action(request)
        return send()

    fault.__name__ = f"after {getattr(action, '__name__', 'action')}"
    return fault


@dataclass
class Times:
    """A plan: `fault` for the requests `matches` accepts, the first `times` of them, at most
    one a burst (a later burst may be the retry of the same batch)."""

    matches: Callable[[Request], bool]
    fault: Fault
    times: int = 1
    per_burst: int = 1
    fired: list[Request] = field(default_factory=list)
    armed: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request) -> Fault | None:
        with self._lock:
            if not self.armed or len(self.fired) >= self.times or not self.matches(request):
                return None
            if sum(r.burst == request.burst for r in self.fired) >= self.per_burst:
                return None
            self.fired.append(request)
            return self.fault


class _Reply:
    """kazoo's async result; awaiting it ends the burst of the thread that issued it. A
    multi's deletes each get the outcome of their own result."""

    def __init__(
        self, real: Any, client: FaultyKazoo, issued: list[Issued], multi: bool = False
    ) -> None:
        self._real, self._client, self._issued, self._multi = real, client, issued, multi

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        self._client._local.index = 0
        try:
            value = self._real.get(block, timeout)
        except Exception as exc:
            for issued in self._issued:
                issued.outcome = type(exc).__name__
            raise
        results = value if self._multi else [True] * len(self._issued)
        for issued, result in zip(self._issued, results, strict=True):
            issued.outcome = type(result).__name__ if isinstance(result, Exception) else "ok"
        return value


@dataclass(frozen=True)
class _Awaited:
    """An async result's own `get`, kept before `_Reply` takes its place."""

    get: Callable[..., Any]


def _forward(done: Any, target: Any) -> None:
    if done.successful():
        target.set(done.value)
    else:
        target.set_exception(done.exception)


class FaultyKazoo(KazooClient):  # type: ignore[misc]
    def __init__(self, hosts: str, plan: Plan, **options: Any) -> None:
        super().__init__(hosts=hosts, **options)
        self.plan = plan
        self.issued: list[Issued] = []
        self.multi_reads = 0  # multiRead requests seen
        self.multi_deletes = 0  # multi requests of deletes seen
        self._local = threading.local()
        self._lock = threading.Lock()
        self._bursts = 0
        self._changed = threading.Condition()
        self.add_listener(self._state_changed)

    def _state_changed(self, state: str) -> None:
        with self._changed:
            self._changed.notify_all()

    def wait_connected(self) -> None:
        """A retry may come while kazoo is still replacing the connection or session a
        fault just broke: break the new one, not a socket already gone."""
        with self._changed:
            assert self._changed.wait_for(lambda: self.state == KazooState.CONNECTED, 15)

    def get_async(self, path: str, watch: Any = None) -> Any:
        return self._issue("get", path, lambda: KazooClient.get_async(self, path, watch))

    def delete_async(self, path: str, version: int = -1) -> Any:
        return self._issue("delete", path, lambda: KazooClient.delete_async(self, path, version))

    def _call(self, request: Any, async_object: Any) -> Any:
        if isinstance(request, MultiRead):
            self.multi_reads += 1
            return self._many(request, "get", list(request.paths), async_object)
        if isinstance(request, Transaction):
            assert all(isinstance(op, Delete) for op in request.operations), request
            self.multi_deletes += 1
            paths = [op.path for op in request.operations]
            return self._many(request, "delete", paths, async_object)
        return KazooClient._call(self, request, async_object)

    def _many(self, request: Any, op: str, paths: list[str], async_object: Any) -> Any:
        """A request of many reads or deletes: each planned, the first fault befalls all."""
        local = self._local
        ops: list[Issued] = []
        chosen: tuple[Request, Fault] | None = None
        for path in paths:
            asked = self._next(op, self.unchroot(path))
            fault = self.plan(asked)
            ops.append(Issued(asked, None if fault is None else fault.__name__))
            chosen = chosen or (None if fault is None else (asked, fault))
        with self._lock:
            self.issued.extend(ops)

        sent: list[bool] = []

        def send() -> Any:
            real = self.handler.async_result()
            KazooClient._call(self, request, real)
            sent.append(True)
            return real

        try:
            reply = send() if chosen is None else chosen[1](self, chosen[0], send)
        except BaseException:
            local.index = 0
            for issued in ops:
                issued.outcome = "unread" if sent else "unsent"
            raise
        reply.rawlink(lambda done: _forward(done, async_object))
        multi = op == "delete"  # a multi's results are per delete; a multiRead's are data
        async_object.get = _Reply(_Awaited(async_object.get), self, ops, multi).get
        return True

    def _next(self, op: str, path: str) -> Request:
        """This thread's next request: the first since its last await opens a burst."""
        local = self._local
        if not getattr(local, "index", 0):
            with self._lock:
                self._bursts += 1
                local.burst = self._bursts
        local.index = getattr(local, "index", 0) + 1
        return Request(op, path, local.index, local.burst)

    def _issue(self, op: str, path: str, send: Send) -> Any:
        local = self._local
        request = self._next(op, path)
        fault = self.plan(request)
        issued = Issued(request, None if fault is None else fault.__name__)
        with self._lock:
            self.issued.append(issued)
        try:
            reply = send() if fault is None else fault(self, request, send)
        except BaseException:
            local.index = 0
            raise
        return _Reply(reply, self, [issued])

    def burst(self, number: int) -> list[Issued]:
        with self._lock:
            return [i for i in self.issued if i.request.burst == number]

    def faulted(self) -> list[Issued]:
        with self._lock:
            return [i for i in self.issued if i.fault is not None]


# --- ground truth, read from the server ------------------------------------------------------


class LedgerZnodes:
    """The ledger-metadata znodes as the server holds them: a plain kazoo client walking
    `/ledgers`, with none of the product's path or format code."""

    def __init__(self, hosts: str) -> None:
        self.client = KazooClient(hosts=hosts, timeout=10)
        self.client.start(timeout=15)

    def paths(self) -> dict[int, str]:
        # kazoo's own retry: a walk cut short by a server restart starts again once it is back.
        found: dict[int, str] = self.client.retry(self._walk)
        return found

    def _walk(self) -> dict[int, str]:
        found: dict[int, str] = {}
        stack = ["/ledgers"]
        while stack:
            path = stack.pop()
            for child in self.client.get_children(path):
                if child.startswith("L") and child[1:].isdigit():
                    digits = "".join(path.split("/")[2:]) + child[1:]
                    found[int(digits)] = f"{path}/{child}"
                elif child.isdigit():
                    stack.append(f"{path}/{child}")
        return found

    def ids(self) -> set[int]:
        return set(self.paths())

    def close(self) -> None:
        self.client.stop()
        self.client.close()


def ledger_metadata(custom: dict[str, bytes]) -> bytes:
    """A closed ledger's metadata (format v3) with this custom metadata, as Pulsar writes it."""
    metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=0, ackQuorumSize=2)
    metadata.state = LedgerMetadataFormat.CLOSED
    metadata.segment.add(ensembleMember=["bookie-1:3181", "bookie-2:3181"], firstEntryId=0)
    for key, value in custom.items():
        metadata.customMetadata.add(key=key, value=value)
    return bk.encode_v3(metadata)
