"""The ZooKeeper MetadataStore, through kazoo."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.interfaces import IAsyncResult
from kazoo.security import CREATOR_ALL_ACL

from config import StoreUrl
from config.zookeeper_tls import ZooKeeperTls
from core.errors import (
    ConfigurationError,
    JanitorError,
    MetadataError,
    TransientMetadataError,
    VersionConflictError,
)
from deletion.adapters.stores import zookeeper_multi_delete as multi_delete
from deletion.adapters.stores.zookeeper_multiread import (
    MultiReader,
    RequestFailedError,
    node_of,
    stat_of,
)
from deletion.adapters.stores.zookeeper_select import SelectHandler
from deletion.adapters.stores.zookeeper_session import SessionWatch
from deletion.adapters.stores.zookeeper_tls_witness import TlsFailureWitness
from deletion.domain.ports import ANY_VERSION, Deletion, MetadataStore, Node, Session, Stat

K = TypeVar("K")
T = TypeVar("T")
READ_WINDOW = 2000  # reads in flight in get_stream: enough to hide the round trip

_TRANSIENT = (
    ConnectionLoss,
    SessionExpiredError,
    OperationTimeoutError,
    ConnectionClosedError,
    KazooTimeoutError,
)


_TRANSLATED = (*_TRANSIENT, KazooException, ValueError)


def _translation(path: str, exc: Exception) -> JanitorError:
    if isinstance(exc, _TRANSIENT):
        return TransientMetadataError(f"ZooKeeper unavailable at {path}: {type(exc).__name__}")
    if isinstance(exc, KazooException):
        return MetadataError(f"ZooKeeper failed at {path}: {type(exc).__name__} {exc}")
    return MetadataError(f"invalid ZooKeeper path {path!r}: {exc}")  # kazoo's validation


@contextmanager
def _translated(path: str) -> Iterator[None]:
    try:
        yield
    except _TRANSLATED as exc:
        raise _translation(path, exc) from exc


# `user:password` for ZooKeeper's digest scheme; from the environment only, never logged.
DIGEST_ENV = "LEDGER_JANITOR_ZOOKEEPER_DIGEST"


def digest_from_env() -> str:
    """The digest credentials of this process, checked only when a client uses them."""
    return os.environ.get(DIGEST_ENV, "")


def _client_options(digest: str, tls: ZooKeeperTls | None) -> dict[str, Any]:
    """Digest credentials, if any; the nodes we create are then ours alone, as BookKeeper
    and Pulsar create theirs when ZooKeeper security is on (CREATOR_ALL_ACL). TLS, if any
    (config.zookeeper_tls): the PEM keystore is both kazoo's certfile and its keyfile."""
    options: dict[str, Any] = {} if tls is None else _tls_options(tls)
    if not digest:
        return options
    if ":" not in digest:
        raise ConfigurationError(f"{DIGEST_ENV} must be user:password")
    return {**options, "auth_data": [("digest", digest)], "default_acl": CREATOR_ALL_ACL}


def _tls_options(tls: ZooKeeperTls) -> dict[str, Any]:
    return {
        "use_ssl": True,
        "certfile": tls.keystore,
        "keyfile": tls.keystore,
        "keyfile_password": tls.keystore_password or None,
        "ca": tls.truststore,
        "verify_certs": True,
        "check_hostname": tls.verify_hostname,
    }


def _started(hosts: str, timeout: float, options: dict[str, Any]) -> KazooClient:
    witness = TlsFailureWitness() if options.get("use_ssl") else None
    if witness is not None:
        options = {**options, "logger": witness.logger}
    client = KazooClient(hosts=hosts, timeout=timeout, handler=SelectHandler(), **options)
    try:
        with warnings.catch_warnings():
            # kazoo warns (two lines on stderr) when the chroot does not exist; the layout
            # checks say so in one line instead (deletion.adapters.layout).
            warnings.filterwarnings("ignore", message="No chroot path exists")
            client.start(timeout=timeout)
    except (KazooException, KazooTimeoutError) as exc:
        client.stop()
        client.close()
        failure = TransientMetadataError if isinstance(exc, _TRANSIENT) else MetadataError
        reason = witness.reason() if witness is not None else ""
        raise failure(f"cannot reach ZooKeeper at {hosts}: {reason or repr(exc)}") from exc
    return client


def connect_client(
    hosts: str,
    chroot: str = "",
    timeout: float = 15.0,
    digest: str | None = None,
    tls: ZooKeeperTls | None = None,
) -> KazooClient:
    """A started kazoo client under `chroot`, authenticated with the digest credentials
    (`digest`, else this process's), over TLS if `tls`. A missing chroot is never made:
    every read under it finds nothing, which the layout checks refuse."""
    options = _client_options(digest_from_env() if digest is None else digest, tls)
    return _started(hosts + chroot, timeout, options)


def _read(reply: IAsyncResult, timeout: float) -> Node | None:
    try:
        data, zstat = reply.get(timeout=timeout)
    except NoNodeError:
        return None
    return node_of(data, zstat)


def _listed(reply: IAsyncResult, timeout: float) -> list[str]:
    try:
        return sorted(reply.get(timeout=timeout))
    except NoNodeError:
        return []


def _ended(error: Exception) -> Deletion | None:
    """How a delete that failed ended: gone, or changed since read; None for any other error."""
    if isinstance(error, NoNodeError):
        return Deletion.GONE
    if isinstance(error, BadVersionError):
        return Deletion.CHANGED
    return None


def _deleted(reply: IAsyncResult, timeout: float) -> Deletion:
    try:
        reply.get(timeout=timeout)
    except KazooException as exc:
        ended = _ended(exc)
        if ended is None:
            raise
        return ended
    return Deletion.DELETED


def _settle(
    paths: Sequence[str],
    pending: Sequence[IAsyncResult],
    outcome: Callable[[IAsyncResult, float], T],
    timeout: float,
) -> list[T]:
    """Await every reply of a pipelined batch, then raise its first error, translated.

    Each wait is bounded: kazoo queues requests while it reconnects, so an outage that
    never ends would otherwise hold the caller forever instead of failing it (transient).
    """
    results: list[T] = []
    failure: JanitorError | None = None
    for path, reply in zip(paths, pending, strict=True):
        try:
            with _translated(path):
                results.append(outcome(reply, timeout))
        except JanitorError as exc:
            failure = failure or exc
    if failure is not None:
        raise failure
    return results


class ZooKeeperMetadataStore(MetadataStore):
    def __init__(
        self,
        client: KazooClient,
        owns_client: bool = False,
        reply_timeout: float = 30.0,
        read_window: int = READ_WINDOW,
    ) -> None:
        self._client = client
        self._owns_client = owns_client
        self._reply_timeout = reply_timeout
        self._multi_reader = MultiReader(client, read_window, reply_timeout)
        self._watch = SessionWatch(client)

    @classmethod
    def connect(
        cls,
        url: StoreUrl,
        timeout: float = 15.0,
        digest: str | None = None,
        tls: ZooKeeperTls | None = None,
    ) -> ZooKeeperMetadataStore:
        client = connect_client(url.hosts, url.chroot, timeout, digest, tls)
        return cls(client, owns_client=True, reply_timeout=2 * timeout)

    @property
    def client(self) -> KazooClient:
        return self._client

    def session(self) -> Session:
        return self._watch.session()

    def get(self, path: str) -> Node | None:
        with _translated(path):
            return _read(self._client.get_async(path), self._reply_timeout)

    def children(self, path: str) -> list[str]:
        with _translated(path):
            try:
                return sorted(self._client.get_children(path))
            except NoNodeError:
                return []

    def create(self, path: str, data: bytes) -> Stat:
        with _translated(path):
            try:
                _, zstat = self._client.create(path, data, makepath=True, include_data=True)
            except NodeExistsError as exc:
                raise VersionConflictError(f"{path} already exists") from exc
        return stat_of(zstat)

    def set(self, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        return self._versioned(path, lambda: self._client.set(path, data, version=expected_version))

    def delete(self, path: str, expected_version: int = ANY_VERSION) -> bool:
        with _translated(path):
            try:
                self._client.delete(path, version=expected_version)
            except NoNodeError:
                return False
            except BadVersionError as exc:
                raise VersionConflictError(f"{path} is not at version {expected_version}") from exc
            except NotEmptyError as exc:
                raise MetadataError(f"{path} has children") from exc
        return True

    def get_many(self, paths: Sequence[str]) -> list[Node | None]:
        """Batched: multiRead requests of up to 200 reads, streamed as `get_stream` does
        (a batch of the worker's is one request)."""
        return [node for _, node in self.get_stream(enumerate(paths))]

    def delete_many(self, versions: Sequence[tuple[str, int]]) -> list[Deletion]:
        """In multi requests (zookeeper_multi_delete). A lone delete, and those a failed
        multi kept from being applied, go one request each, pipelined. Every reply is
        awaited before the first error is raised, translated."""
        if len(versions) < 2:
            return self._delete_each(versions)
        paths = [path for path, _ in versions]
        try:
            sent = multi_delete.send(self._client, versions)
        except RequestFailedError as exc:
            raise _translation(exc.path, exc.cause) from exc.cause
        outcomes: dict[int, Deletion] = {}
        again: list[int] = []
        failure: JanitorError | None = None
        for multi in sent:
            try:
                answer = self._answer(multi, paths)
            except JanitorError as exc:
                failure = failure or exc
                continue
            if answer.applied:
                outcomes.update(dict.fromkeys(multi.places, Deletion.DELETED))
            elif answer.failed is not None:
                place, error = answer.failed
                ended = _ended(error)
                if ended is None:
                    failure = failure or _translation(paths[place], error)
                else:
                    outcomes[place] = ended
            again.extend(answer.again)
        try:
            retried = self._delete_each([versions[p] for p in again])
            outcomes.update(zip(again, retried, strict=True))
        except JanitorError as exc:
            failure = failure or exc
        if failure is not None:
            raise failure
        return [outcomes[place] for place in range(len(versions))]

    def _answer(self, multi: multi_delete.MultiDelete, paths: Sequence[str]) -> multi_delete.Answer:
        with _translated(paths[multi.places[0]]):
            return multi_delete.answer(multi, self._reply_timeout)

    def _delete_each(self, versions: Sequence[tuple[str, int]]) -> list[Deletion]:
        paths = [path for path, _ in versions]
        with _translated(paths[0] if paths else "/"):
            pending = [self._client.delete_async(path, version) for path, version in versions]
        return _settle(paths, pending, _deleted, self._reply_timeout)

    def children_many(self, paths: Sequence[str]) -> list[list[str]]:
        with _translated(paths[0] if paths else "/"):
            pending = [self._client.get_children_async(path) for path in paths]
        return _settle(paths, pending, _listed, self._reply_timeout)

    def get_stream(self, keyed: Iterable[tuple[K, str]]) -> Iterator[tuple[K, Node | None]]:
        """A sliding window of `read_window` reads in flight, by multiRead requests
        (zookeeper_multiread): the connection never idles waiting for the caller, nor the
        caller for the whole window."""
        try:
            for key, path, reply in self._multi_reader.stream(keyed):
                if isinstance(reply, NoNodeError):
                    yield key, None
                elif isinstance(reply, Exception):
                    raise _translation(path, reply) from reply
                else:
                    yield key, reply
        except RequestFailedError as exc:
            if isinstance(exc.cause, _TRANSLATED):
                raise _translation(exc.path, exc.cause) from exc.cause
            raise

    def _versioned(self, path: str, operation: Callable[[], Any]) -> Stat:
        with _translated(path):
            try:
                return stat_of(operation())
            except (BadVersionError, NoNodeError) as exc:
                raise VersionConflictError(f"{path}: {type(exc).__name__}") from exc

    def close(self) -> None:
        self._watch.stopping()
        if self._owns_client:
            self._client.stop()
            self._client.close()
