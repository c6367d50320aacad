"""`ledger-janitor run`: the worker, its operations port, and a clean stop on SIGTERM.

A sidecar starts with its cluster, and its broker or ZooKeeper may come up after it or go
away for a while: then it says in one line what it cannot reach, serves /ready as 503 with
that reason, and keeps trying (1 s, 2 s, ... up to 30 s apart) until it can or is stopped.
A store that answers but holds no cluster layout (no `/ledgers/LAYOUT`, no `/admin`: a
wrong chroot, or a cluster whose bookies have not started yet) is waited for the same way,
acting on nothing, with one error line (again only when the reason changes): exiting would
crash-loop a broker pod's native sidecar and hold its broker back. A wrong setting (a named
SQLite file that does not exist, say) is not retried: it is reported and `run` exits.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from pathlib import Path

import pulsar
import structlog
from prometheus_client import CollectorRegistry

from config import ServiceConfiguration, parse_store_url
from consumers.metrics import WorkerMetrics
from consumers.worker import STOP_SECONDS, DeletionWorker, bounded
from core.errors import BrokerError, LayoutError, LedgerStorageError, MetadataError
from deletion.adapters.opening import make_embedded_store
from deletion.domain.topics import NamespaceName
from ledger_janitor import __version__, logs
from ledger_janitor.sidecar.endpoint import OperationsEndpoint
from ledger_janitor.sidecar.metrics import sidecar_registry
from ledger_janitor.sidecar.monitor import Monitor
from ledger_janitor.sidecar.reachability import PROBE_SECONDS, unreachable
from ledger_janitor.sidecar.wiring import Sidecar, open_sidecar

log = structlog.get_logger(__name__)
startup_log = logs.always(__name__)  # its one line is written under --quiet too
FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 30.0
NO_NAMESPACE = (
    "no namespace to watch yet (ready and idle): set deletionNamespaces=tenant/namespace[,...], "
    "or let phase one register one (its first enqueue does); looking again every {every:g} s"
)
EVERY_NAMESPACE = "every namespace with a deletion topic"
# SIGTERM to exit, whatever is unreachable: well within Kubernetes' default 30 s grace.
SHUTDOWN_SECONDS = 10.0
# Past the bound, before the process is made to exit whatever it is doing.
WATCHDOG_SLACK_SECONDS = 1.0
# Worth another try later; anything else (a wrong setting) ends `run`.
RETRIED = (MetadataError, BrokerError, LedgerStorageError, pulsar.PulsarException)
# Wrong credentials do not fix themselves.
NOT_RETRIED = (pulsar.AuthenticationError, pulsar.AuthorizationError)


class SidecarStatus:
    """What /health, /ready and the gauges answer while the sidecar connects, runs and
    stops: /health, that the process and its worker's threads are alive (also while it
    keeps trying to connect); /ready, that it reaches its metadata store and broker (an
    idle sidecar, with no namespace to watch yet, is ready)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting_for = "starting"
        self._running: tuple[Sidecar, DeletionWorker, Monitor] | None = None
        self.refresh_seconds = 10.0

    def waiting(self, problem: str) -> None:
        with self._lock:
            self._waiting_for = problem

    def running(self, sidecar: Sidecar, worker: DeletionWorker, monitor: Monitor) -> None:
        with self._lock:
            self._running = sidecar, worker, monitor

    def _now(self) -> tuple[tuple[Sidecar, DeletionWorker, Monitor] | None, str]:
        with self._lock:
            return self._running, self._waiting_for

    def worker(self) -> DeletionWorker | None:
        running, _ = self._now()
        return None if running is None else running[1]

    def live(self) -> tuple[bool, str]:
        running, waiting_for = self._now()
        if running is None:  # alive and retrying: a restart would not make the broker appear
            return True, f"connecting: {waiting_for}"
        return running[1].live()

    def ready(self) -> tuple[bool, str]:
        running, waiting_for = self._now()
        if running is None:
            return False, waiting_for
        _, worker, monitor = running
        live, detail = worker.live()
        if not live:
            return False, detail
        return monitor.ready()

    def reachable(self, what: str) -> bool:
        running, _ = self._now()
        return running is not None and running[2].reachable(what)

    def archive_backlog(self) -> dict[NamespaceName, int] | None:
        running, _ = self._now()
        return None if running is None else running[2].archive_backlog()


def connect(
    config: ServiceConfiguration,
    stop: threading.Event,
    status: SidecarStatus,
    registry: CollectorRegistry | None,
) -> tuple[Sidecar, DeletionWorker] | None:
    """The sidecar with its worker started, once everything answers; None if stopped first."""
    sidecar: Sidecar | None = None
    worker: DeletionWorker | None = None
    delay = FIRST_RETRY_SECONDS
    probe_seconds = min(float(config.operation_timeout_seconds), PROBE_SECONDS)
    said_layout = ""
    try:
        while not stop.is_set():
            problem = unreachable(config, probe_seconds)
            layout = ""
            if problem is None:
                try:
                    sidecar = sidecar or open_sidecar(config)
                    worker = worker or sidecar.worker(
                        metrics=WorkerMetrics(registry or CollectorRegistry()),
                        refresh_interval_seconds=status.refresh_seconds,
                    )
                    freeze_heap()
                    worker.start()
                    return sidecar, worker
                except NOT_RETRIED as exc:
                    raise BrokerError(f"the broker refused our credentials: {exc}") from None
                except LayoutError as exc:
                    problem = layout = f"{exc}; acting on nothing until it is there"
                except RETRIED as exc:
                    problem = f"could not start: {type(exc).__name__}: {exc}"
            status.waiting(problem)
            if not layout:
                log.warning(problem, retry_in_seconds=delay)
            elif layout != said_layout:  # once, and again when the reason changes
                log.error(layout, retry_in_seconds=delay)
            said_layout = layout
            stop.wait(delay)
            delay = min(delay * 2, MAX_RETRY_SECONDS)
    except BaseException:
        if sidecar is not None:
            sidecar.close()
        raise
    if sidecar is not None:
        sidecar.close()
    return None


def freeze_heap() -> None:
    """Put what the process has built so far out of the cyclic collector's reach
    (`gc.freeze`): the clients, schemas, configuration and modules live as long as the
    process, yet each full collection under load walked them all again, which cost the
    worker 2.5 µs a message (2 collections of about 37 ms in 30,000 deletions, in
    bench.worker_throughput); frozen, 0.15. Garbage made before is collected first."""
    gc.collect()
    gc.freeze()


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


def _stop_within_bound(stop: threading.Event) -> None:
    """Stop, and make sure the process is gone SHUTDOWN_SECONDS (and a little) later even if
    something the orderly stop does not bound hangs (a connection being opened, a client's
    destructor at exit): nothing unacked is lost, the broker redelivers it."""
    if stop.is_set():
        return
    stop.set()
    watchdog = threading.Timer(SHUTDOWN_SECONDS + WATCHDOG_SLACK_SECONDS, _exit_now)
    watchdog.daemon = True
    watchdog.start()


def _exit_now() -> None:
    log.warning(
        "shutdown took longer than its bound; exiting now (unacked messages are redelivered)",
        bound_seconds=SHUTDOWN_SECONDS,
    )
    logs.flush()
    os._exit(0)


def describe_start(config: ServiceConfiguration) -> None:
    """The start-up line: version, stores, broker, admin URL and namespaces."""
    ledgers = config.bookkeeper_metadata_service_uri or config.metadata_store_url
    admin = config.web_service_url or "none"
    namespaces = ",".join(config.deletion_namespaces) or EVERY_NAMESPACE
    startup_log.info(
        f"ledger-janitor {__version__} starting: metadata store {config.metadata_store_url}, "
        f"ledger storage {ledgers}, broker {config.broker_service_url}, admin URL {admin}, "
        f"namespaces {namespaces}",
        version=__version__,
        metadata_store=config.metadata_store_url,
        ledger_storage=ledgers,
        broker_url=config.broker_service_url,
        admin_url=config.web_service_url or None,
        namespaces=list(config.deletion_namespaces) or EVERY_NAMESPACE,
    )


def make_local_default(config: ServiceConfiguration) -> None:
    """With no store named, the local default (`sqlite:ledger-janitor.db`) is made if
    missing, with a warning: the one store `run` makes. A store named must exist."""
    default = ServiceConfiguration().metadata_store_url
    ledgers = config.bookkeeper_metadata_service_uri or config.metadata_store_url
    if {config.metadata_store_url, ledgers} != {default}:
        return  # a store named: it must exist (nothing makes it)
    path = Path(parse_store_url(default).path)
    if not path.exists():
        log.warning(
            f"creating the embedded SQLite store {path.resolve()} "
            "(metadataStoreUrl's local default, not a Pulsar cluster's metadata): for a "
            "cluster, set metadataStoreUrl=zk:host:2181 (or --metadata-store)"
        )
    make_embedded_store(path)  # made, or one made by an older version laid out as now


def start_endpoint(
    config: ServiceConfiguration, status: SidecarStatus
) -> OperationsEndpoint | None:
    """/metrics, /health and /ready, up before anything is reached, so that an orchestrator
    sees why the sidecar is not ready; None when metricsPort is 0."""
    if not config.metrics_port:
        return None
    registry = sidecar_registry(status)
    host, port = config.metrics_bind_address, config.metrics_port
    return OperationsEndpoint(registry, status.live, status.ready, host, port).start()


def run_sidecar(config: ServiceConfiguration, stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: _stop_within_bound(stop))
    status = SidecarStatus()
    endpoint = start_endpoint(config, status)  # a port in use ends `run` before anything else
    describe_start(config)
    try:
        make_local_default(config)
        connected = connect(config, stop, status, endpoint.registry if endpoint else None)
        if connected is None:
            log.info("stopped before connecting")
            return
        sidecar, worker = connected
        monitor = Monitor(sidecar, worker).start()
        status.running(sidecar, worker, monitor)
        warn_about_policies(sidecar)
        log.info(
            "worker running",
            namespaces=[str(ns) for ns in worker.subscribed],
            metrics_port=endpoint.port if endpoint else None,
        )
        if not worker.subscribed:
            log.info(NO_NAMESPACE.format(every=status.refresh_seconds))
        stop.wait()
        shut_down(sidecar, worker, monitor)
    finally:
        if endpoint is not None:
            endpoint.stop()


def shut_down(sidecar: Sidecar, worker: DeletionWorker, monitor: Monitor) -> None:
    """Within SHUTDOWN_SECONDS whatever does not answer: the worker's in-flight batches and
    subscriptions (STOP_SECONDS at most), then the clients and stores."""
    started = time.monotonic()
    log.info("stopping; finishing in-flight deletions", bound_seconds=SHUTDOWN_SECONDS)
    monitor.stop()
    worker.stop(min(STOP_SECONDS, SHUTDOWN_SECONDS))
    left = SHUTDOWN_SECONDS - (time.monotonic() - started)
    if not bounded(sidecar.close, left):
        log.warning(
            "closing the broker client and stores did not finish in time; exiting anyway "
            "(nothing unacked is lost: the broker redelivers it)",
            bound_seconds=SHUTDOWN_SECONDS,
        )
    log.info("stopped", seconds=round(time.monotonic() - started, 3), **worker.stats.summary())
