"""`ledger-janitor run` as an operator starts it, with what they would look at: its stdout
and stderr kept apart, /health, /ready and /metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ledger_janitor.demo.embedded import free_port

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass
class Run:
    process: subprocess.Popen[str]
    port: int
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    exited_after: float | None = None

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in list(self.stderr) if line.startswith("{")]

    def said(self, text: str, level: str | None = None) -> bool:
        return any(
            text in event["event"] and (level is None or event["level"] == level)
            for event in self.events()
        )

    def status(self, path: str) -> int:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=2).status_code
        except httpx.TransportError:
            return 0

    def scrape(self) -> Samples:
        """Every sample of /metrics; none while the port is not open yet."""
        try:
            text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5).text
        except httpx.TransportError:
            return {}
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def sample(self, name: str, **labels: str) -> float | None:
        return self.scrape().get((name, tuple(sorted(labels.items()))))

    def terminate(self, timeout: float = 60) -> float:
        """SIGTERM, as Kubernetes sends it; the seconds until the process exited (rc 0)."""
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=timeout) == 0, "".join(self.stderr)
        self.exited_after = time.monotonic() - began
        return self.exited_after


def _read(stream: Any, into: list[str]) -> None:
    for line in iter(stream.readline, ""):
        into.append(line)


def start_run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, port: int = 0
) -> Run:
    """`ledger-janitor run ARGS` (metricsPort a free port unless `port` or ARGS say)."""
    port = port or free_port()
    environ = {**os.environ, "PYTHONUNBUFFERED": "1", "LEDGER_JANITOR_METRICS_PORT": str(port)}
    process = subprocess.Popen(
        [sys.executable, "-m", "ledger_janitor", "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**environ, **(env or {})},
    )
    run = Run(process, port)
    for stream, lines in ((process.stdout, run.stdout), (process.stderr, run.stderr)):
        threading.Thread(target=_read, args=(stream, lines), daemon=True).start()
    return run


def settings(**values: object) -> list[str]:
    """`--set key=value` for each; a test's ledgers are seconds old and its clock is one."""
    values = {
        "clockSkewAllowanceSecondsOfTwoPhaseDeletion": 0,
        "minLedgerAgeSecondsOfTwoPhaseDeletion": 0,
        **values,
    }
    return [arg for key, value in values.items() for arg in ("--set", f"{key}={value}")]


@contextmanager
def running(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, port: int = 0
) -> Iterator[Run]:
    """`start_run`, and the process killed at the end if the test left it running."""
    run = start_run(*args, cwd=cwd, env=env, port=port)
    try:
        yield run
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
