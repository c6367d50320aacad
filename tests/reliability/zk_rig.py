"""What the batch-fault and early-delivery tests share: a private chroot on the session's
ZooKeeper, workers whose ledger store runs on a FaultyKazoo, the oracle's checks against
the server's znodes, and a fake wall clock."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from consumers.observer import Observer
from consumers.worker import DeletionWorker
from core.clock import EpochSeconds, WallClock, wall_clock
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.outcome import Outcome
from harness.janitor import JanitorFactory, Recorder, zookeeper_backend
from harness.process import wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.zk_faults import Fault, FaultyKazoo, LedgerZnodes, Plan, Request


@dataclass
class ZkRig:
    janitor: JanitorFactory
    server: str  # the ZooKeeper server's hosts
    hosts: str  # with the test's chroot
    znodes: LedgerZnodes
    referenced: set[int] = field(default_factory=set)  # what the test planted as such
    released: set[int] = field(default_factory=set)  # unreferenced, and enqueued
    paths: dict[int, str] = field(default_factory=dict)  # ledger -> znode, as planted
    workers: list[DeletionWorker] = field(default_factory=list)

    def worker(
        self,
        plan: Plan,
        observer: Observer,
        settings: dict[str, object],
        clock: WallClock = wall_clock,
        backlog: int = 0,
    ) -> tuple[DeletionWorker, FaultyKazoo]:
        """A started worker whose ledger store (only) talks through a FaultyKazoo.

        With a `backlog`, its first ledger read waits until it has received that many
        messages: its queue of due messages is then full, so its next batch is too."""
        ready = threading.Event()

        def held(request: Request) -> Fault | None:
            assert ready.wait(30), "no backlog"
            return plan(request)

        side = self.janitor.sidecar(**settings)
        client = FaultyKazoo(self.hosts, held, timeout=10)
        client.start(timeout=15)
        side.ledgers = BookKeeperLedgerStorage(ZooKeeperMetadataStore(client, owns_client=True))
        side.closer.callback(side.ledgers.close)
        worker = side.worker(clock, [observer], refresh_interval_seconds=0.2)
        worker.start()
        self.workers.append(worker)
        if backlog:
            wait_until(lambda: worker.stats.received >= backlog, 30, "a backlog")
        ready.set()
        return worker, client

    def wait_gone(self, ledgers: set[int], timeout: float = 60.0) -> None:
        left: set[int] = set()

        def gone() -> bool:
            left.clear()
            left.update(ledgers & self.znodes.ids())
            return not left

        try:
            wait_until(gone, timeout, "ledgers gone")
        except AssertionError:
            raise AssertionError(f"ledgers still there: {sorted(left)}") from None

    def ledger_of(self, path: str) -> int:
        (ledger,) = [i for i, known in self.paths.items() if known == path]
        return ledger

    def assert_referenced_intact(self) -> None:
        missing = sorted(self.referenced - self.znodes.ids())
        assert missing == [], f"referenced ledgers deleted: {missing}"


def outcomes(ledgers: set[int], *recorders: Recorder) -> dict[int, list[Outcome]]:
    return {i: [o for r in recorders for o in r.of(i)] for i in sorted(ledgers)}


def wait_outcomes(
    ledgers: set[int], *recorders: Recorder, final: tuple[Outcome, ...], timeout: float = 30.0
) -> dict[int, list[Outcome]]:
    """Every ledger's outcomes, once the last of each is one of `final`. A batch's results
    are recorded after its deletes and acks, so a ledger is gone a moment before."""

    def done() -> bool:
        return all(found and found[-1] in final for found in outcomes(ledgers, *recorders).values())

    try:
        wait_until(done, timeout, "outcomes")
    except AssertionError:
        found = outcomes(ledgers, *recorders)
        reasons = {
            r.info.ledger_id: r.reason
            for recorder in recorders
            for r in recorder.results
            if r.info and r.info.ledger_id in ledgers and found[r.info.ledger_id][-1] not in final
        }
        raise AssertionError(f"not settled: {found}; last reasons: {reasons}") from None
    return outcomes(ledgers, *recorders)


@contextmanager
def zk_rig(
    zookeeper: ZooKeeperServer, broker: EmbeddedBroker, chroot: str, tmp_path: Path
) -> Iterator[ZkRig]:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    znodes = LedgerZnodes(zookeeper.hosts + chroot)
    rig = ZkRig(janitor, zookeeper.hosts, zookeeper.hosts + chroot, znodes)
    try:
        yield rig
    finally:
        for worker in rig.workers:
            worker.stop()
        janitor.close()
        backend.ledgers.close()
        znodes.close()


class FakeClock:
    """Epoch seconds that move only when the test moves them; counts each thread's reads."""

    GATE = "early-gate"  # the worker's thread that releases held messages

    def __init__(self, now: float) -> None:
        self._now = now
        self._changed = threading.Condition()
        self._reads: Counter[str] = Counter()

    def __call__(self) -> EpochSeconds:
        with self._changed:
            self._reads[threading.current_thread().name] += 1
            self._changed.notify_all()
            return EpochSeconds(self._now)

    def set(self, now: float) -> None:
        with self._changed:
            assert now >= self._now, "the clock never goes back"
            self._now = now

    def settle(self, reads: int = 6, timeout: float = 30.0) -> None:
        """Wait until the gate has looked at the clock `reads` more times (it waits at most
        half a second between looks): it has released whatever the current time makes due,
        and a handler has had time to act on it."""
        with self._changed:
            target = self._reads[self.GATE] + reads
            settled = self._changed.wait_for(lambda: self._reads[self.GATE] >= target, timeout)
            assert settled, "the gate stopped reading the clock"
