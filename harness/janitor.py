"""Test-side helpers: backends for both adapters, a result recorder, and a ledger factory."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from config import ServiceConfiguration, parse_store_url
from config.zookeeper_tls import ZooKeeperTls
from consumers.observer import Observer
from consumers.worker import DeletionWorker
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.opening import make_embedded_store
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.outcome import Outcome, Result
from deletion.domain.ports import LedgerStorage, MetadataStore
from deletion.domain.topics import NamespaceName
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from ledger_janitor.sidecar.wiring import Sidecar, open_sidecar


class ZkLedgerFactory:
    """Creates BookKeeper ledger-metadata znodes (format v3), as a Pulsar broker's client would."""

    def __init__(self, store: MetadataStore, first_id: int = 1) -> None:
        self._store = store
        self._ids = itertools.count(first_id)
        self._lock = threading.Lock()
        self.deleted_log: list[int] = []

    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int:
        with self._lock:
            ledger_id = next(self._ids)
        metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=0, ackQuorumSize=2)
        metadata.state = LedgerMetadataFormat.CLOSED
        metadata.segment.add(ensembleMember=["bookie-1:3181", "bookie-2:3181"], firstEntryId=0)
        for key, value in custom_metadata.items():
            metadata.customMetadata.add(key=key, value=value)
        self._store.create(bk.ledger_path(ledger_id), bk.encode_v3(metadata))
        return ledger_id


@dataclass
class Backend:
    """One adapter pair under test, plus a way to create ledgers and to list survivors."""

    name: str
    metadata_url: str
    metadata: MetadataStore
    ledgers: LedgerStorage
    factory: SqliteLedgerStorage | ZkLedgerFactory

    def exists(self, ledger_id: int) -> bool:
        return self.ledgers.ledger(ledger_id) is not None


@dataclass
class Recorder(Observer):
    """Collects handling results from worker threads; tests wait on conditions, not clocks."""

    results: list[Result] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
        self.record(result)

    def record(self, result: Result) -> None:
        with self._changed:
            self.results.append(result)
            self.times.append(time.time())
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[list[Result]], bool], timeout: float = 30.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self.results), timeout):
                raise AssertionError(
                    f"condition not met within {timeout}s; results: {self.results}"
                )

    def of(self, ledger_id: int) -> list[Outcome]:
        with self._changed:
            return [r.outcome for r in self.results if r.info and r.info.ledger_id == ledger_id]

    def count(self, outcome: Outcome) -> int:
        with self._changed:
            return sum(r.outcome is outcome for r in self.results)


def embedded_store(path: str | Path) -> str:
    """An embedded store made at `path`, as the demo makes its own (nothing else makes one),
    as the `sqlite:` URL a command is given."""
    make_embedded_store(path)
    return f"sqlite:{path}"


def sqlite_backend(path: str) -> Backend:
    """The embedded store, made as the demo makes it (laid out as a cluster's)."""
    from deletion.adapters.stores.sqlite import SqliteMetadataStore

    make_embedded_store(path)
    storage = SqliteLedgerStorage(path)
    return Backend("sqlite", f"sqlite:{path}", SqliteMetadataStore(path), storage, storage)


def make_chroot(
    hosts: str, chroot: str, tls: ZooKeeperTls | None = None, digest: str | None = None
) -> None:
    """A chroot laid out as a Pulsar cluster's (see `lay_out_cluster`); nothing in the
    product makes one."""
    chrooted(hosts, chroot, tls, digest).close()


def chrooted(
    hosts: str, chroot: str, tls: ZooKeeperTls | None = None, digest: str | None = None
) -> ZooKeeperMetadataStore:
    """A store on `chroot`, made first and laid out as a cluster's (over TLS, with digest
    credentials, if given), as a test's own store."""
    if chroot:
        bare = ZooKeeperMetadataStore.connect(parse_store_url(f"zk:{hosts}"), 30, digest, tls)
        try:
            bare.client.ensure_path(chroot)
        finally:
            bare.close()
    store = ZooKeeperMetadataStore.connect(parse_store_url(f"zk:{hosts}{chroot}"), 30, digest, tls)
    lay_out_cluster(store)
    return store


def lay_out_cluster(store: MetadataStore) -> None:
    """What a Pulsar cluster's store holds before any test writes to it: `/admin`,
    `/managed-ledgers` and BookKeeper's `/ledgers/LAYOUT` (ManagedLedgerWriter.lay_out);
    each topic the writer then creates brings its namespace's policies node."""
    ManagedLedgerWriter(store).lay_out()


def zookeeper_backend(hosts: str, chroot: str, first_ledger_id: int = 1) -> Backend:
    url = f"zk:{hosts}{chroot}"
    store = chrooted(hosts, chroot)
    return Backend(
        "zookeeper",
        url,
        store,
        BookKeeperLedgerStorage(store),
        ZkLedgerFactory(store, first_ledger_id),
    )


class JanitorFactory:
    """Opens sidecars (phase one and workers) on one backend and broker; closes them all."""

    def __init__(self, backend: Backend, service_url: str, tmp: Path) -> None:
        self.backend = backend
        self._service_url = service_url
        self._tmp = tmp
        self._open: list[Sidecar] = []
        self._workers: list[DeletionWorker] = []

    def config(self, **overrides: object) -> ServiceConfiguration:
        settings: dict[str, object] = {
            "broker_service_url": self._service_url,
            "metadata_store_url": self.backend.metadata_url,
            "send_delay_seconds_of_two_phase_deletion": 1,
            # One machine, one clock: no skew to allow for.
            "clock_skew_allowance_seconds_of_two_phase_deletion": 0,
            # A test's ledgers are seconds old: no age rule unless a test asks for one (the
            # rule has tests of its own: test_decision_creators, the model test, ...).
            "min_ledger_age_seconds_of_two_phase_deletion": 0,
            # No ZooKeeper outage to settle from, unless a test makes one (and sets it).
            "metadata_store_session_timeout_millis": 0,
            "reconsume_later_seconds_of_two_phase_deletion": 1,
            "max_reconsume_times_of_two_phase_deletion": 3,
            "operation_timeout_seconds": 10,
        }
        settings.update(overrides)
        return ServiceConfiguration().with_overrides(**settings)

    def sidecar(self, **overrides: object) -> Sidecar:
        sidecar = open_sidecar(self.config(**overrides), client_log=self._tmp / "client.log")
        self._open.append(sidecar)
        return sidecar

    def worker(self, recorder: Recorder, **overrides: object) -> DeletionWorker:
        worker = self.sidecar(**overrides).worker(
            observers=[recorder], refresh_interval_seconds=0.2
        )
        worker.start()
        self._workers.append(worker)
        return worker

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        for sidecar in reversed(self._open):
            sidecar.close()
