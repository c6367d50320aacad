"""`ledger-janitor run`: the worker, its operations port, and a clean stop on SIGTERM."""

from __future__ import annotations

import signal
import threading

import structlog
from prometheus_client import CollectorRegistry

from config import ServiceConfiguration
from consumers.metrics import WorkerMetrics

from .endpoint import OperationsEndpoint
from .wiring import open_sidecar

log = structlog.get_logger(__name__)


def run_sidecar(config: ServiceConfiguration, stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    sidecar = open_sidecar(config)
    registry = CollectorRegistry()
    worker = sidecar.worker(metrics=WorkerMetrics(registry))
    endpoint = None
    try:
        worker.start()
        if config.metrics_port:

            def ready() -> tuple[bool, str]:
                checks = [sidecar.metadata_reachable(), worker.connected()]
                return all(ok for ok, _ in checks), "; ".join(detail for _, detail in checks)

            endpoint = OperationsEndpoint(
                registry, worker.live, ready, config.metrics_bind_address, config.metrics_port
            ).start()
        log.info(
            "worker running",
            namespaces=[str(ns) for ns in worker.subscribed],
            metrics_port=endpoint.port if endpoint else None,
        )
        stop.wait()
        log.info("stopping; finishing in-flight deletions")
        worker.stop()
        log.info("stopped", **worker.stats.summary())
    finally:
        if endpoint is not None:
            endpoint.stop()
        sidecar.close()
