"""The CPU a timed step used: its own process's and the whole machine's.

A rate alone does not say what bounds it. A Python process busy on one core while the
machine has cores to spare is bound by its interpreter lock; a machine with no core to
spare is bound by its cores, whichever process is busiest. The step's process time counts
every thread of it (the Pulsar C++ client's and kazoo's too); the machine's busy time
counts ZooKeeper and the broker as well, so the machine's CPU per message bounds the rate
this work could reach were every core busy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")  # guest time is in user


def _machine_busy_seconds() -> float:
    times = psutil.cpu_times()
    return sum(float(getattr(times, name, 0.0)) for name in _BUSY)


@dataclass(frozen=True)
class CpuSpan:
    """Started where a step's timing starts; `figures` where it ends."""

    process_seconds: float
    machine_seconds: float
    wall_seconds: float

    @classmethod
    def start(cls) -> CpuSpan:
        return cls(time.process_time(), _machine_busy_seconds(), time.perf_counter())

    def figures(self, handled: int) -> dict[str, float]:
        """The span's seconds; this process's and the machine's CPU per message handled;
        the cores each kept busy on average over the span."""
        wall = time.perf_counter() - self.wall_seconds
        process = time.process_time() - self.process_seconds
        machine = _machine_busy_seconds() - self.machine_seconds
        return {
            "seconds": wall,
            "cpu_us_per_message": process / max(handled, 1) * 1e6,
            "machine_cpu_us_per_message": machine / max(handled, 1) * 1e6,
            "process_cores": process / wall,
            "machine_busy_cores": machine / wall,
            "machine_cores": float(psutil.cpu_count() or 1),
        }
