"""The worker as several sidecars run it: a process each, on the same Shared subscriptions.

A cluster runs one sidecar next to each broker, and a Shared subscription spreads the
deletion topics over every sidecar's consumers, so the workers of a cluster add up as
processes, each with its own interpreter lock, Pulsar client and ZooKeeper session. Here
each process opens its own sidecar from the same configuration, as `ledger-janitor run`
does; the step is timed from their start to the last of the N results, whichever process
handled it.

pulsar-lite refuses a consumer whose id another connection already uses on a subscription,
so each process after the first skips ids first (harness/pulsar_lite.py).
"""

from __future__ import annotations

import multiprocessing
import resource
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import Services, quiet, remaining
from bench.cpu import CpuSpan
from bench.worker_steps import seed_pending_deletions, worker_config
from config import ServiceConfiguration
from consumers.observer import Observer
from deletion.domain.outcome import Result
from deletion.domain.topics import NamespaceName
from harness.pulsar_lite import skip_consumer_ids
from ledger_janitor.sidecar.run import freeze_heap
from ledger_janitor.sidecar.wiring import open_sidecar

CONSUMER_IDS_PER_PROCESS = 500  # a worker takes about a dozen a namespace
READY_SECONDS = 120  # to open a sidecar and skip its ids: a few seconds
WAIT_SECONDS = 600


class SharedCount(Observer):
    """Counts the results of every process in one shared counter, and wakes the bench once
    they reach `total`; keeps this process's own share too."""

    def __init__(self, handled: Any, total: int, done: Any) -> None:
        self._handled, self._total, self._done = handled, total, done
        self.own = 0

    def on_handled_batch(
        self, handled: Sequence[tuple[NamespaceName, Result]], seconds: float
    ) -> None:
        with self._handled.get_lock():  # handler threads call this concurrently
            self.own += len(handled)
            self._handled.value += len(handled)
            if self._handled.value >= self._total:
                self._done.set()


def sidecars_rate(
    svc: Services,
    chroot: str,
    count: int,
    topics: int,
    parallelism: int,
    batch_size: int,
    processes: int,
) -> dict[str, Any]:
    """`processes` sidecars' workers handling `count` enqueued, committed, unreferenced
    ledgers (seeded as for `worker_rate`): the rate, each process's share of the results,
    the largest one's peak RSS, and the CPU the span used."""
    config = worker_config(svc, chroot, parallelism, batch_size)
    sidecar = open_sidecar(config, client_log=svc.root / "client.log")
    try:
        seeded = seed_pending_deletions(sidecar, count, topics)
    finally:
        sidecar.close()
    released = {i for entry in seeded for i in entry.released}
    referenced = set().union(*(entry.referenced() for entry in seeded))
    context = multiprocessing.get_context("spawn")  # no Pulsar client forked half-alive
    handled, shares = context.Value("q", 0), context.Array("q", processes)
    peaks = context.Array("d", processes)
    ready, go, done = context.Barrier(processes + 1), context.Event(), context.Event()
    children = [
        context.Process(
            target=_sidecar,
            args=(config, svc.root, i, len(released), (handled, shares, peaks, ready, go, done)),
        )
        for i in range(processes)
    ]
    for child in children:
        child.start()
    try:
        ready.wait(READY_SECONDS)  # a process that failed to start breaks it: no hang
        span = CpuSpan.start()
        go.set()
        if not done.wait(WAIT_SECONDS):
            raise RuntimeError(f"only {handled.value} of {len(released)} handled")
        spent = span.figures(len(released))
    finally:
        done.set()
        go.set()
        for child in children:
            child.join(WAIT_SECONDS)
    sidecar = open_sidecar(config, client_log=svc.root / "client.log")
    try:
        left = remaining(sidecar.metadata)
    finally:
        sidecar.close()
    return {
        "per_second": len(released) / spent["seconds"],
        "processes": processes,
        "handled_by_each": shares[:],
        "peak_rss_mb": max(peaks[:]),  # the largest sidecar's, not this step's
        "correct": not (left & released) and referenced <= left,
        **spent,
    }


def _sidecar(
    config: ServiceConfiguration, root: Path, index: int, total: int, shared: tuple[Any, ...]
) -> None:
    handled, shares, peaks, ready, go, done = shared
    quiet()
    sidecar = open_sidecar(config, client_log=root / f"client-{index}.log")
    try:
        skip_consumer_ids(sidecar.client, index * CONSUMER_IDS_PER_PROCESS)
        count = SharedCount(handled, total, done)
        worker = sidecar.worker(observers=[count], refresh_interval_seconds=1.0)
        freeze_heap()  # as `run` does before it starts the worker
        ready.wait(READY_SECONDS)
        go.wait(WAIT_SECONDS)
        worker.start()
        done.wait(WAIT_SECONDS)
        worker.stop()
        shares[index] = count.own
        peaks[index] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB here
    finally:
        sidecar.close()
