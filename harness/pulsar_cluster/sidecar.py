"""The sidecar next to a broker: `ledger-janitor run -c <that broker's broker.conf>` in a
process (and process group) of its own, what an operator runs in the broker's pod. The store
and the broker's own URLs come from that file, read as the broker reads it; what a test
wants besides (no metrics port, short delays) is given with `--set`, the file untouched.

Its stdout and stderr go to a file next to the broker's logs (a pipe nobody reads would fill
and stall it), so a failed test can show the tail.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.process import ROOT

# One machine, one clock; a test's ledgers are seconds old; phase two within seconds.
TEST_SETTINGS: Mapping[str, object] = {
    "metricsPort": 0,
    "clockSkewAllowanceSecondsOfTwoPhaseDeletion": 0,
    "minLedgerAgeSecondsOfTwoPhaseDeletion": 0,
    # No outage to settle from, unless a test makes one (and sets it).
    "metadataStoreSessionTimeoutMillis": 0,
    "sendDelaySecondsOfTwoPhaseDeletion": 2,
    "reconsumeLaterSecondsOfTwoPhaseDeletion": 1,
}


class SidecarProcess:
    def __init__(self, name: str, conf: Path, log_path: Path) -> None:
        self.name = name
        self.conf = conf
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0  # when it was last started (epoch seconds, as its log's clock)

    def start(self, **settings: object) -> SidecarProcess:
        """`run -c <broker.conf>` with TEST_SETTINGS and `settings` as `--set`s (None drops one)."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        chosen = {**TEST_SETTINGS, **settings}
        overrides = [
            arg
            for key, value in chosen.items()
            if value is not None
            for arg in ("--set", f"{key}={value}")
        ]
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.started_at = time.time()
        with self.log_path.open("ab") as log:
            log.write(f"--- {time.strftime('%H:%M:%S')} starting {self.name}\n".encode())
            log.flush()
            # -v: each message's outcome, the scenarios' record of who deleted what.
            command = ["run", "-v", "-c", str(self.conf), *overrides]
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ledger_janitor", *command],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,
            )  # fmt: skip
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.process.pid

    def stop(self, grace: float = 30.0) -> int | None:
        """SIGTERM, as the pod's stop does; SIGKILL after `grace`. Its exit code (None: it
        was not running; -9: it had to be killed)."""
        return self._end(signal.SIGTERM, grace)

    def kill(self) -> None:
        self._end(signal.SIGKILL, 30.0)

    def pause(self) -> None:
        os.killpg(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.pid, signal.SIGCONT)

    def _end(self, sent: signal.Signals, grace: float) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, sent)
        try:
            code = process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            code = process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        return code

    def events(self) -> list[dict[str, Any]]:
        """Its JSON log lines, each with `at`: its timestamp in epoch seconds (the harness's
        own marker lines are not JSON)."""
        found = []
        for line in self.log_text().splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                stamp = entry.get("timestamp", "").replace("Z", "+00:00")
                entry["at"] = datetime.fromisoformat(stamp).timestamp() if stamp else 0.0
                found.append(entry)
        return found

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        tail = self.log_text().splitlines()[-lines:]
        return f"--- last {len(tail)} lines of {self.log_path}:\n" + "\n".join(tail)
