"""`ledger-janitor run`: the worker, its operations port, and a clean stop on SIGTERM.

A sidecar starts with its cluster, and its broker or ZooKeeper may come up after it or go
away for a while: then it says in one line what it cannot reach, serves /ready as 503 with
that reason, and keeps trying (1 s, 2 s, ... up to 30 s apart) until it can or is stopped.
A wrong setting is not retried: it is reported and `run` exits.
"""

from __future__ import annotations

import signal
import threading

import pulsar
import structlog
from prometheus_client import CollectorRegistry

from config import ServiceConfiguration
from consumers.metrics import WorkerMetrics
from consumers.worker import DeletionWorker
from core.errors import BrokerError, LedgerStorageError, MetadataError
from ledger_janitor.endpoint import OperationsEndpoint
from ledger_janitor.reachability import PROBE_SECONDS, unreachable
from ledger_janitor.wiring import Sidecar, open_sidecar

log = structlog.get_logger(__name__)
FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 30.0
NO_NAMESPACE = (
    "no namespace to watch: set deletionNamespaces=tenant/namespace[,...], or let phase one "
    "register one (its first enqueue does); looking again every {every:g} s"
)
# Worth another try later; anything else (a wrong setting) ends `run`.
RETRIED = (MetadataError, BrokerError, LedgerStorageError, pulsar.PulsarException)
# Wrong credentials do not fix themselves.
NOT_RETRIED = (pulsar.AuthenticationError, pulsar.AuthorizationError)


class SidecarStatus:
    """What /health and /ready answer while the sidecar connects, runs and stops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting_for = "starting"
        self._running: tuple[Sidecar, DeletionWorker] | None = None
        self.refresh_seconds = 10.0

    def waiting(self, problem: str) -> None:
        with self._lock:
            self._waiting_for = problem

    def running(self, sidecar: Sidecar, worker: DeletionWorker) -> None:
        with self._lock:
            self._running = sidecar, worker

    def live(self) -> tuple[bool, str]:
        with self._lock:
            running, waiting_for = self._running, self._waiting_for
        if running is None:  # alive and retrying: a restart would not make the broker appear
            return True, f"connecting: {waiting_for}"
        return running[1].live()

    def ready(self) -> tuple[bool, str]:
        with self._lock:
            running, waiting_for = self._running, self._waiting_for
        if running is None:
            return False, waiting_for
        sidecar, worker = running
        checks = [sidecar.metadata_reachable(), worker.connected()]
        if not worker.subscribed:
            checks.append((False, NO_NAMESPACE.format(every=self.refresh_seconds)))
        return all(ok for ok, _ in checks), "; ".join(detail for _, detail in checks)


def connect(
    config: ServiceConfiguration,
    stop: threading.Event,
    status: SidecarStatus,
    registry: CollectorRegistry,
) -> tuple[Sidecar, DeletionWorker] | None:
    """The sidecar with its worker started, once everything answers; None if stopped first."""
    sidecar: Sidecar | None = None
    worker: DeletionWorker | None = None
    delay = FIRST_RETRY_SECONDS
    probe_seconds = min(float(config.operation_timeout_seconds), PROBE_SECONDS)
    try:
        while not stop.is_set():
            problem = unreachable(config, probe_seconds)
            if problem is None:
                try:
                    sidecar = sidecar or open_sidecar(config)
                    worker = worker or sidecar.worker(
                        metrics=WorkerMetrics(registry),
                        refresh_interval_seconds=status.refresh_seconds,
                    )
                    worker.start()
                    return sidecar, worker
                except NOT_RETRIED as exc:
                    raise BrokerError(f"the broker refused our credentials: {exc}") from None
                except RETRIED as exc:
                    problem = f"could not start: {type(exc).__name__}: {exc}"
            status.waiting(problem)
            log.warning(problem, retry_in_seconds=delay)
            stop.wait(delay)
            delay = min(delay * 2, MAX_RETRY_SECONDS)
    except BaseException:
        if sidecar is not None:
            sidecar.close()
        raise
    if sidecar is not None:
        sidecar.close()
    return None


def warn_about_policies(sidecar: Sidecar) -> None:
    """One line per namespace whose policies could lose a pending deletion; a policy that
    cannot be read is said too, and does not stop the worker."""
    try:
        risks = sidecar.policy_risks()
    except RETRIED as exc:
        log.warning("could not read namespace policies", error=str(exc))
        return
    for namespace, found in risks.items():
        log.warning(f"namespace {namespace}: a pending deletion could be lost: " + "; ".join(found))


def run_sidecar(config: ServiceConfiguration, stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    registry = CollectorRegistry()
    status = SidecarStatus()
    endpoint = None
    if config.metrics_port:
        # Up before anything is reached, so that an orchestrator sees why it is not ready.
        endpoint = OperationsEndpoint(
            registry, status.live, status.ready, config.metrics_bind_address, config.metrics_port
        ).start()
    try:
        connected = connect(config, stop, status, registry)
        if connected is None:
            log.info("stopped before connecting")
            return
        sidecar, worker = connected
        status.running(sidecar, worker)
        warn_about_policies(sidecar)
        try:
            log.info(
                "worker running",
                namespaces=[str(ns) for ns in worker.subscribed],
                metrics_port=endpoint.port if endpoint else None,
            )
            if not worker.subscribed:
                log.warning(NO_NAMESPACE.format(every=status.refresh_seconds))
            stop.wait()
            log.info("stopping; finishing in-flight deletions")
            worker.stop()
            log.info("stopped", **worker.stats.summary())
        finally:
            sidecar.close()
    finally:
        if endpoint is not None:
            endpoint.stop()
