"""Shared by the reliability tests: worker processes, the broker's own metrics, and reading
the archive. Scenarios with known truth are in scenario.py, the oracle in oracle.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulsar
from prometheus_client.parser import text_string_to_metric_families

from core.errors import DecodeError
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.topics import NamespaceName
from harness.process import wait_until
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port

REPO = Path(__file__).resolve().parents[2]
LONG = os.environ.get("LEDGER_JANITOR_LONG_TESTS") == "1"


def scaled(default: int, long: int) -> int:
    """The default run's size, or the long variant's with LEDGER_JANITOR_LONG_TESTS=1."""
    return long if LONG else default


# --- the archive --------------------------------------------------------------------------


@dataclass(frozen=True)
class Archived:
    ledger_id: int | None  # None: the payload does not decode
    topic: str | None
    reason: str


def read_archive(
    client: pulsar.Client,
    namespaces: Iterable[NamespaceName],
    done: Callable[[list[Archived]], bool],
    timeout: float = 60.0,
) -> list[Archived]:
    """Archived messages, consumed on a subscription of our own, until `done` says so."""
    consumer = client.subscribe(
        [ns.archive_topic for ns in namespaces],
        f"inspect-{uuid.uuid4().hex[:8]}",
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    found: list[Archived] = []
    try:
        deadline = time.monotonic() + timeout
        while not done(found):
            remaining_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
            assert remaining_ms > 0, f"archive incomplete after {timeout}s: {found}"
            try:
                received = consumer.receive(min(remaining_ms, 1000))
            except pulsar.Timeout:
                continue
            consumer.acknowledge(received)
            found.append(_archived(received))
    finally:
        consumer.close()
    return found


def _archived(received: Any) -> Archived:
    reason = received.properties().get(props.ARCHIVE_REASON, "")
    try:
        info: PendingDeleteLedgerInfo | None = message.decode(received.data())
    except DecodeError:
        info = None
    if info is None:
        return Archived(None, None, reason)
    return Archived(info.ledger_id, str(info.topic_name), reason)


def archived_ids(found: Iterable[Archived]) -> set[int]:
    return {a.ledger_id for a in found if a.ledger_id is not None}


# --- the broker's own view ----------------------------------------------------------------


def broker_metrics(broker: EmbeddedBroker) -> dict[str, list[tuple[dict[str, str], float]]]:
    """pulsar-lite's Prometheus metrics: name -> [(labels, value)]."""
    config = (broker.data_dir / "pulsar-lite.toml").read_text()
    match = re.search(r'addr = "([^"]+)"', config)
    assert match is not None
    with urllib.request.urlopen(f"http://{match.group(1)}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def metric_sum(
    samples: Mapping[str, list[tuple[dict[str, str], float]]], name: str, **labels: str
) -> float:
    return sum(
        value
        for sample_labels, value in samples.get(name, [])
        if all(sample_labels.get(k) == v for k, v in labels.items())
    )


# --- `ledger-janitor run` processes -------------------------------------------------------


@dataclass
class WorkerProcess:
    """`ledger-janitor run` through tests/reliability/worker_main.py (see there why)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    out: Path
    metrics_port: int

    @property
    def pid(self) -> int:
        return self.process.pid

    def metrics(self) -> dict[str, list[tuple[dict[str, str], float]]] | None:
        try:
            url = f"http://127.0.0.1:{self.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as answer:
                text = answer.read().decode()
        except OSError:
            return None
        samples: dict[str, list[tuple[dict[str, str], float]]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples.setdefault(sample.name, []).append((sample.labels, sample.value))
        return samples

    def handled(self, *outcomes: str) -> float:
        samples = self.metrics() or {}
        name = "ledger_janitor_messages_handled_total"
        return sum(metric_sum(samples, name, outcome=outcome) for outcome in outcomes)

    def ready(self) -> bool:
        self.assert_alive()
        try:
            url = f"http://127.0.0.1:{self.metrics_port}/ready"
            with urllib.request.urlopen(url, timeout=5) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def assert_alive(self) -> None:
        code = self.process.poll()
        assert code is None, f"{self.name} exited with {code}:\n{self.log.read_text()[-3000:]}"

    def peak_rss_kb(self) -> int:
        """VmHWM: the peak resident set size of the process so far."""
        return self._status_kb("VmHWM")

    def rss_kb(self) -> int:
        return self._status_kb("VmRSS")

    def _status_kb(self, field: str) -> int:
        status = Path(f"/proc/{self.pid}/status").read_text()
        match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
        assert match is not None
        return int(match.group(1))

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> dict[str, Any]:
        """SIGTERM; the process must exit 0. Returns the report worker_main printed."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=90)
        assert code == 0, f"{self.name} exited with {code}:\n{self.log.read_text()[-3000:]}"
        reports = [line for line in self.out.read_text().splitlines() if line.startswith("{")]
        assert reports, f"{self.name} printed no report"
        report: dict[str, Any] = json.loads(reports[-1])
        return report

    def log_text(self) -> str:
        return self.log.read_text()


def start_worker(
    name: str,
    directory: Path,
    metadata_url: str,
    broker_url: str,
    burn_consumer_ids: int = 0,
    env: Mapping[str, str] | None = None,
    quiet: bool = True,
    settings: Mapping[str, object] | None = None,
) -> WorkerProcess:
    port = free_port()
    # One machine, one clock: no skew to allow for. A test's ledgers are seconds old: no
    # age rule unless the test sets one.
    settings = {
        "metricsPort": port,
        "clockSkewAllowanceSecondsOfTwoPhaseDeletion": 0,
        "minLedgerAgeSecondsOfTwoPhaseDeletion": 0,
        **(settings or {}),
    }
    overrides = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    log, out = directory / f"{name}.log", directory / f"{name}.out"
    with log.open("ab") as stderr, out.open("ab") as stdout:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.reliability.worker_main",
                str(burn_consumer_ids),
                "run",
                *(["--quiet"] if quiet else []),
                "--metadata-store",
                metadata_url,
                "--broker-url",
                broker_url,
                *overrides,
            ],
            stdout=stdout,
            stderr=stderr,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
    started = WorkerProcess(name, process, log, out, port)
    RUNNING.append(started)
    return started


# Every worker process a test started: conftest.py kills those a failed test left behind.
RUNNING: list[WorkerProcess] = []


def kill_leftovers() -> None:
    while RUNNING:
        worker = RUNNING.pop()
        if worker.process.poll() is None:
            worker.kill()


def wait_ready(*workers: WorkerProcess, timeout: float = 60.0) -> None:
    for worker in workers:
        wait_until(worker.ready, timeout, f"{worker.name} ready")
