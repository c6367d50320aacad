"""The sidecar as an operator starts it: `ledger-janitor run` in its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def start_sidecar(metadata_url: str, broker_url: str, **settings: object) -> subprocess.Popen[str]:
    """Tests must not fight over the default port; one machine has one clock, so no skew; a
    test's ledgers are seconds old, so no age rule. A setting given as None keeps the
    product's default."""
    settings = {
        "metricsPort": 0,
        "clockSkewAllowanceSecondsOfTwoPhaseDeletion": 0,
        "minLedgerAgeSecondsOfTwoPhaseDeletion": 0,
        # No ZooKeeper outage to settle from, unless a test makes one (and sets it).
        "metadataStoreSessionTimeoutMillis": 0,
        **settings,
    }
    overrides = [
        arg
        for key, value in settings.items()
        if value is not None
        for arg in ("--set", f"{key}={value}")
    ]
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ledger_janitor",
            "run",
            "-v",  # each message's outcome, the tests' record of what it did (INFO: a summary)
            "--metadata-store",
            metadata_url,
            "--broker-url",
            broker_url,
            *overrides,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def stop_sidecar(process: subprocess.Popen[str]) -> str:
    """SIGTERM, as an orchestrator would; the process must exit 0. Returns its stderr."""
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    return stderr


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.02
) -> None:
    """Poll another process's effects (it cannot notify us), every `poll` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)


def cli_environment(
    columns: int | None = 80, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What a person's shell hands `ledger-janitor`: this checkout first on the path, and a
    terminal width (`columns=None` leaves COLUMNS unset: a pipe, a pod log)."""
    environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    if columns is not None:
        environment["COLUMNS"] = str(columns)
    return {**environment, **(env or {})}


def run_cli(
    *args: str,
    columns: int | None = 80,
    timeout: float = 120,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`ledger-janitor ARGS` as a person runs it: a process of its own, off a terminal, its
    stdout and stderr read whole. `columns=None` leaves COLUMNS unset (a pipe, a pod log)."""
    return subprocess.run(
        [sys.executable, "-m", "ledger_janitor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=cli_environment(columns, env),
    )


def start_cli(*args: str, columns: int | None = 80) -> subprocess.Popen[str]:
    """`run_cli` without waiting: the test acts while the command runs, then `communicate`s."""
    return subprocess.Popen(
        [sys.executable, "-m", "ledger_janitor", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_environment(columns),
    )


@contextmanager
def paused(process: subprocess.Popen[Any]) -> Iterator[None]:
    """The process stopped (SIGSTOP) for the block, continued (SIGCONT) on leaving, whatever
    happened: a server that hangs. Its sockets stay open and the kernel still takes bytes for
    it (a connection is accepted, a request is sent), but nothing is answered."""
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)
