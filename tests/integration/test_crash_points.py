"""A crash between every pair of phase-two steps loses nothing and deletes nothing referenced.

The crash is a BaseException raised at one step, which aborts the handling without an ack,
as a killed process would; the crashed worker is then closed and a fresh one (new cache,
new connections) takes the redelivered message over.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from deletion.domain.outcome import Outcome
from deletion.domain.ports import ANY_VERSION, LedgerRecord, LedgerStorage, MetadataStore, Node
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory, Recorder
from ledger_janitor.sidecar.wiring import Sidecar
from tests.reliability.oracle import GroundTruth, pending
from tests.reliability.scenario import raw_for

# The simulated crash ends the handler thread it strikes, as it would the process.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


class SimulatedCrash(BaseException):
    """Not an Exception: nothing in the worker may catch it and carry on."""


class Trap:
    def __init__(self) -> None:
        self.sprung = threading.Event()

    def spring(self) -> None:
        if not self.sprung.is_set():
            self.sprung.set()
            raise SimulatedCrash


class CrashingMetadata:
    """Crashes on the first read of a managed ledger: between receive and the in-use check."""

    def __init__(self, real: MetadataStore, trap: Trap) -> None:
        self._real, self._trap = real, trap

    def get(self, path: str) -> Node | None:
        if path.startswith("/managed-ledgers/"):
            self._trap.spring()
        return self._real.get(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class CrashingStorage(LedgerStorage):
    def __init__(self, real: LedgerStorage, trap: Trap, step: str) -> None:
        self._real, self._trap, self._step = real, trap, step

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        if self._step == "before_ownership_read":
            self._trap.spring()
        return self._real.ledger(ledger_id)

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        if self._step == "before_delete":
            self._trap.spring()
        deleted = self._real.delete_ledger(ledger_id, expected_version)
        if self._step == "after_delete_before_ack":
            self._trap.spring()
        return deleted

    def close(self) -> None:
        self._real.close()


class CrashingPool:
    """Crashes after a retry or archive send was acknowledged, before the original's ack."""

    def __init__(self, real: Any, trap: Trap) -> None:
        self._real, self._trap = real, trap

    def send(self, topic: str, *args: Any, **kwargs: Any) -> Any:
        future = self._real.send(topic, *args, **kwargs)
        future.result(10)
        self._trap.spring()
        return future

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _arm(sidecar: Sidecar, step: str, trap: Trap) -> None:
    if step == "before_in_use_check":
        sidecar.metadata = CrashingMetadata(sidecar.metadata, trap)
    elif step in ("before_ownership_read", "before_delete", "after_delete_before_ack"):
        sidecar.ledgers = CrashingStorage(sidecar.ledgers, trap, step)
    else:
        sidecar.pool = CrashingPool(sidecar.pool, trap)  # type: ignore[assignment]


def _crash_then_recover(
    janitor: JanitorFactory, step: str, enqueue: Callable[[Sidecar], None]
) -> Recorder:
    trap, first = Trap(), Recorder()
    crashing = janitor.sidecar()
    _arm(crashing, step, trap)
    enqueue(janitor.sidecar())
    worker = crashing.worker(observers=[first], refresh_interval_seconds=0.2)
    worker.start()
    assert trap.sprung.wait(30), f"the crash at {step} never happened"
    worker.stop()  # the crashed handling never acked: the broker redelivers
    recovered = Recorder()
    janitor.worker(recovered)
    return recovered


DELETE_STEPS = [
    "before_in_use_check",
    "before_ownership_read",
    "before_delete",
    "after_delete_before_ack",
]


@pytest.mark.parametrize("step", DELETE_STEPS)
def test_crash_on_the_delete_path_deletes_exactly_once(
    janitor: JanitorFactory, namespace: NamespaceName, step: str
) -> None:
    truth = GroundTruth(janitor.backend.metadata, janitor.backend.factory)
    topic = TopicName(namespace, "t-partition-0")
    target = truth.seed(topic, 3, ("sub", "reader"), schema_versions=1).ledgers[0]

    def enqueue(sidecar: Sidecar) -> None:
        sidecar.phase_one.enqueue_then_commit(
            [pending(topic, target)], lambda: truth.release(topic, [target])
        )

    recovered = _crash_then_recover(janitor, step, enqueue)
    expected = Outcome.ALREADY_GONE if step == "after_delete_before_ack" else Outcome.DELETED
    recovered.wait_for(lambda rs: recovered.of(target) == [expected])
    _assert_safe(janitor, truth, deleted={target})


@pytest.mark.parametrize("step", ["after_retry_send_before_ack", "after_archive_send_before_ack"])
def test_crash_on_the_reconsume_path_never_deletes_a_referenced_ledger(
    janitor: JanitorFactory, namespace: NamespaceName, step: str
) -> None:
    truth = GroundTruth(janitor.backend.metadata, janitor.backend.factory)
    seeded = truth.seed(TopicName(namespace, "t"), 3, ("sub", "reader"), schema_versions=1)
    referenced = seeded.ledgers[1]
    times = 0 if step == "after_retry_send_before_ack" else 3

    def enqueue(sidecar: Sidecar) -> None:
        # Phase one "crashed" before its commit: the ledger is still referenced.
        info = pending(seeded.topic, referenced)
        from deletion.domain import message, message_properties

        sidecar.registry.register(namespace)
        properties = {
            message_properties.RECONSUME_TIMES: str(times),
            message_properties.DELAY_TIME: "0",
        }
        sidecar.pool.send(namespace.deletion_topic, message.encode(info), properties).result(10)

    recovered = _crash_then_recover(janitor, step, enqueue)
    recovered.wait_for(lambda rs: Outcome.ARCHIVED in recovered.of(referenced))
    assert Outcome.DELETED not in recovered.of(referenced)
    _assert_safe(janitor, truth, deleted=set())


def _assert_safe(janitor: JanitorFactory, truth: GroundTruth, deleted: set[int]) -> None:
    """Against the test's own record and the ledger store's raw state: exactly `deleted`
    is gone (once, where the store logs deletions), everything referenced is there."""
    raw = raw_for(janitor.backend)
    assert set(truth.owner) - raw.alive() == deleted
    assert truth.referenced() <= raw.alive()
    logged = raw.deletions()
    assert logged is None or sorted(logged) == sorted(deleted)
