"""Peak resident memory of one measured step, per process of a PySpark run.

Linux keeps each process's peak (VmHWM in /proc/PID/status) and resets it when "5" is
written to /proc/PID/clear_refs (proc(5)), so a step's own peak is read by resetting before
it and reading after. Three figures: the driver (this Python process: the bench, the
single-process scans, py4j), the JVM (Spark's driver and, in local mode, its executors), and
the Python workers (the executors' Python processes: largest one alive after the step, as a
partition's memory is what a worker's share of a cluster must hold). Without /proc the
driver's figure is getrusage's peak since start (an upper bound) and the others are None.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
PROC = Path("/proc")


@dataclass(frozen=True)
class PeakRss:
    """Peak resident set sizes in MiB; None where the process does not exist or cannot be read."""

    driver_mb: float
    jvm_mb: float | None = None
    python_workers_mb: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def _reset(pid: int) -> bool:
    try:
        (PROC / str(pid) / "clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_mb(pid: int) -> float | None:
    try:
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def _parent(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def descendants(root: int) -> list[int]:
    """Every process below `root` (PySpark's workers are forked by a daemon the JVM starts)."""
    parents = {int(p.name): _parent(int(p.name)) for p in PROC.iterdir() if p.name.isdigit()}
    found, frontier = [], {root}
    while frontier:
        below = {pid for pid, parent in parents.items() if parent in frontier}
        found.extend(sorted(below))
        frontier = below
    return found


def measured(action: Callable[[], T], jvm_pid: int | None = None) -> tuple[T, float, PeakRss]:
    """The action's value, its wall seconds and the peaks of memory while it ran."""
    driver, workers = os.getpid(), descendants(jvm_pid) if jvm_pid else []
    resettable = PROC.is_dir() and all(_reset(pid) for pid in [driver, *workers, jvm_pid] if pid)
    started = time.perf_counter()
    value = action()
    seconds = time.perf_counter() - started
    if not resettable:
        since_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return value, seconds, PeakRss(round(since_start, 1))
    worker_peaks = [_peak_mb(pid) for pid in descendants(jvm_pid)] if jvm_pid else []
    return (
        value,
        seconds,
        PeakRss(
            _peak_mb(driver) or 0.0,
            _peak_mb(jvm_pid) if jvm_pid else None,
            max((p for p in worker_peaks if p is not None), default=None),
        ),
    )


def jvm_pid() -> int | None:
    """The pid of the JVM PySpark started for this process's SparkContext, if any."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None) if gateway is not None else None
    return getattr(process, "pid", None)
