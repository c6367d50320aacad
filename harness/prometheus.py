"""A real Prometheus server (Debian's `prometheus` package) on a free loopback port: its own
directory, a 1 s scrape and evaluation interval, the rule files given; stopped as a whole
process group, so nothing it started outlives it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from ledger_janitor.demo.embedded import free_port

BINARY = "/usr/bin/prometheus"


class PrometheusError(RuntimeError):
    pass


class PrometheusServer:
    def __init__(self, root: Path, targets: dict[str, list[str]], rule_files: list[Path]) -> None:
        """`targets`: job name -> host:port list, each scraped every second."""
        self.root = root
        self.targets = targets
        self.rule_files = rule_files
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> PrometheusServer:
        if not Path(BINARY).exists() and shutil.which("prometheus") is None:
            raise RuntimeError("needs Debian's prometheus package; scripts/test.sh installs it")
        self.root.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(path) for path in self.rule_files],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": hosts}]}
                for job, hosts in self.targets.items()
            ],
        }
        (self.root / "prometheus.yml").write_text(yaml.safe_dump(config))
        log = (self.root / "prometheus.log").open("ab")
        self.process = subprocess.Popen(
            [
                shutil.which("prometheus") or BINARY,
                f"--config.file={self.root / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.root / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() ends all of it
        )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Prometheus exited; see {self.root / 'prometheus.log'}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"Prometheus was not ready within {timeout}s")

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query through the HTTP API: its result vector (empty: no data)."""
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        body = answer.json()
        if body.get("status") != "success":
            raise PrometheusError(f"{expr}: {body.get('errorType')}: {body.get('error')}")
        result = body["data"]["result"]
        return result if isinstance(result, list) else [{"value": result}]

    def api(self, path: str) -> Any:
        answer = httpx.get(f"{self.url}/api/v1/{path}", timeout=10)
        answer.raise_for_status()
        return answer.json()["data"]

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
        self.process = None
