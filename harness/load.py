"""Run a command while other processes keep the machine's cores busy, as a shared CI runner
or a busy laptop does; say the load average it ran under.

    python -m harness.load [--spinners N] -- COMMAND [ARG ...]

N processes (default 4) spin at the command's own priority for as long as it runs; the
1-minute load average is sampled every 15 s. At the end one line on stderr gives the
command's time and the load it met (mean and peak); the exit code is the command's. The
spinners are stopped however the command ends (Ctrl-C included): nothing is left running.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence


def _spin() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    while True:
        pass


def run_loaded(command: Sequence[str], spinners: int, every: float = 15.0) -> int:
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_spin, daemon=True) for _ in range(spinners)]
    for worker in workers:
        worker.start()
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        return subprocess.call(list(command))
    finally:
        took = time.monotonic() - started
        done.set()
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()
        mean = sum(samples) / len(samples) if samples else os.getloadavg()[0]
        peak = max(samples, default=mean)
        print(
            f"load: {spinners} spinners on {os.cpu_count()} cores; {took / 60:.1f} min; "
            f"1-min load average mean {mean:.1f}, peak {peak:.1f} ({len(samples)} samples)",
            file=sys.stderr,
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.load",
        description="Run COMMAND while N spinning processes keep the cores busy.",
    )
    parser.add_argument("--spinners", type=int, default=4, help="busy processes (default 4)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: python -m harness.load -- COMMAND [ARG ...]")
    return run_loaded(command, args.spinners)


if __name__ == "__main__":
    sys.exit(main())
