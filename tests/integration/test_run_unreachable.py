"""`ledger-janitor run` when what it needs is not there (yet): one line saying what it cannot
reach, within seconds; /ready 503 with that reason; retries until it can, or until SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from deletion.domain.topics import NamespaceName
from harness.janitor import embedded_store
from harness.process import wait_until
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port

# Far below the 30 s the Pulsar client and kazoo wait before giving up.
QUICKLY = 10.0


@dataclass
class Running:
    process: subprocess.Popen[str]
    port: int
    lines: list[str] = field(default_factory=list)

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def ready(self) -> tuple[int, str]:
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.port}/ready", timeout=2)
        except httpx.TransportError:
            return 0, ""
        return answer.status_code, answer.text

    def health(self) -> int:
        return httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code


Start = Callable[..., Running]


@pytest.fixture
def run_janitor() -> Iterator[Start]:
    started: list[Running] = []

    def start(metadata_url: str, broker_url: str, *settings: str) -> Running:
        port = free_port()
        overrides = ["metricsPort=" + str(port), *settings]
        process = subprocess.Popen(
            [sys.executable, "-m", "ledger_janitor", "run", "--metadata-store", metadata_url]
            + ["--broker-url", broker_url]
            + [arg for item in overrides for arg in ("--set", item)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # the Pulsar client's own log goes to stdout
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        running = Running(process, port)
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(
            target=lambda: running.lines.extend(iter(stream.readline, "")), daemon=True
        ).start()
        started.append(running)
        return running

    yield start
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait()


def stop(running: Running) -> None:
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(timeout=60) == 0, "".join(running.lines)
    output = "".join(running.lines)
    assert "Traceback" not in output, output


def test_broker_down_is_said_at_once_then_retried_until_it_is_up(
    run_janitor: Start, tmp_path: Path, namespace: NamespaceName
) -> None:
    broker_port = free_port()
    url = f"pulsar://127.0.0.1:{broker_port}"
    began = time.monotonic()
    running = run_janitor(
        embedded_store(tmp_path / "janitor.db"), url, f"deletionNamespaces={namespace}"
    )
    wait_until(lambda: running.said(f"cannot reach the broker at {url}"), QUICKLY, "the line")
    assert time.monotonic() - began < QUICKLY
    status, detail = running.ready()
    assert status == 503 and f"cannot reach the broker at {url}" in detail
    assert running.health() == 200  # alive, and retrying
    with EmbeddedBroker(tmp_path / "late-broker", port=broker_port):
        wait_until(lambda: running.ready()[0] == 200, 60, "readiness once the broker is up")
        stop(running)
    # One line per attempt, nothing else: no client noise before the broker came up.
    before_up = [line for line in running.lines if "cannot reach" in line]
    assert before_up and all(line.startswith("{") for line in running.lines), running.lines


def test_metadata_store_down_is_said_at_once(run_janitor: Start, broker: EmbeddedBroker) -> None:
    store = f"zk:127.0.0.1:{free_port()}/pulsar"
    running = run_janitor(store, broker.service_url)
    wait_until(
        lambda: running.said(f"cannot reach the metadata store at {store}"), QUICKLY, "the line"
    )
    status, detail = running.ready()
    assert status == 503 and "cannot reach the metadata store" in detail
    stop(running)


def test_no_namespace_to_watch_is_said_and_idle_is_ready(
    run_janitor: Start, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """A fresh cluster has no deletion topic yet: the sidecar says so, and is ready (a
    readiness probe must not keep the broker's pod NotReady for it)."""
    running = run_janitor(embedded_store(tmp_path / "janitor.db"), broker.service_url)
    wait_until(lambda: running.said("no namespace to watch"), QUICKLY * 3, "the line")
    assert running.said("deletionNamespaces=tenant/namespace")
    wait_until(lambda: running.ready()[0] == 200, QUICKLY, "readiness")
    status, detail = running.ready()
    assert status == 200 and "watching 0 namespaces" in detail
    assert "metadata store reachable" in detail
    assert running.health() == 200
    stop(running)
