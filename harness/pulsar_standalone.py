"""A real Apache Pulsar standalone (broker, bookie, ZooKeeper in one JVM) on free loopback
ports, its metadata in ZooKeeper, started with the distribution's own `bin/pulsar`.

The settings are the distribution's `conf/standalone.conf` with those of
`harness/pulsar/standalone.conf` laid over it (the one source, which the compose file reads
too), then this broker's ports and paths, then a test's own. A key already in the file is
replaced where it stands: the bookie reads the same file through Apache Commons
Configuration, which would make a repeated key a list.

The JVM is sized for a 2-core machine (1 GiB heap, 1 GiB direct, G1 without pre-touch) and
runs in a process group of its own, so that `stop` (SIGTERM, then SIGKILL) and `kill`
(SIGKILL: a crash) leave nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from harness.pulsar_dist import Distribution, distribution
from ledger_janitor.demo.embedded import free_port

OVERRIDES = Path(__file__).parent / "pulsar" / "standalone.conf"
JVM = {
    "PULSAR_MEM": "-Xms1g -Xmx1g -XX:MaxDirectMemorySize=1g",
    "PULSAR_GC": "-XX:+UseG1GC -XX:+PerfDisableSharedMem",
    "PULSAR_STANDALONE_USE_ZOOKEEPER": "1",  # else 4.0 keeps its metadata in RocksDB
}
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*=")


def read_settings(path: Path) -> dict[str, str]:
    """`key=value` lines of a properties file (comments and blanks skipped)."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        match = _KEY.match(line)
        if match and not line.lstrip().startswith("#"):
            found[match[1]] = line.split("=", 1)[1].strip()
    return found


def overlay(base: str, settings: Mapping[str, object]) -> str:
    """`base` (a properties file's text) with each setting replacing its key's line, or
    appended when the key is not there."""
    pending = {key: str(value) for key, value in settings.items()}
    lines = []
    for line in base.splitlines():
        match = _KEY.match(line)
        if match and not line.lstrip().startswith("#") and match[1] in pending:
            line = f"{match[1]}={pending.pop(match[1])}"
        lines.append(line)
    lines.extend(f"{key}={value}" for key, value in pending.items())
    return "\n".join(lines) + "\n"


class PulsarStandalone:
    def __init__(
        self,
        root: Path,
        settings: Mapping[str, object] | None = None,
        dist: Distribution | None = None,
        admin_token: str | None = None,
    ) -> None:
        """`admin_token`: a superuser's, for the health check of a broker that authenticates."""
        self.root = root
        self.admin_token = admin_token
        self.dist = dist or distribution()
        self.extra = dict(settings or {})
        self.broker_port, self.web_port = free_port(), free_port()
        self.zookeeper_port, self.bookie_port = free_port(), free_port()
        self.bookie_http_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.offload_dir = root / "offload"
        self.bookie_dir = root / "data" / "bookkeeper"

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def bookie_http_url(self) -> str:
        return f"http://127.0.0.1:{self.bookie_http_port}"

    @property
    def zookeeper_hosts(self) -> str:
        return f"127.0.0.1:{self.zookeeper_port}"

    @property
    def metadata_url(self) -> str:
        return f"zk:{self.zookeeper_hosts}"

    @property
    def ledger_dir(self) -> Path:
        """Where the bookie keeps entry logs and indexes (`--bookkeeper-dir` plus its index)."""
        return self.root / "data" / "bookkeeper0"

    def settings(self) -> dict[str, object]:
        conf = self.dist.home / "conf"
        return {
            **read_settings(OVERRIDES),
            "brokerServicePort": self.broker_port,
            "webServicePort": self.web_port,
            "bindAddress": "127.0.0.1",
            "advertisedAddress": "127.0.0.1",
            "listeningInterface": "lo",  # the bookie, on loopback too
            "httpServerPort": self.bookie_http_port,
            "fileSystemURI": f"file://{self.offload_dir}",
            "fileSystemProfilePath": conf / "filesystem_offload_core_site.xml",
            "offloadersDirectory": self.dist.offloaders,
            "narExtractionDirectory": self.root / "nar",
            **self.extra,
        }

    def write_conf(self) -> Path:
        path = self.root / "standalone.conf"
        base = (self.dist.home / "conf" / "standalone.conf").read_text()
        path.write_text(overlay(base, self.settings()))
        return path

    def start(self, timeout: float = 180.0) -> PulsarStandalone:
        """Start on the data left by an earlier start, if any (a cold restart)."""
        for directory in (self.root / "logs", self.offload_dir, self.root / "data"):
            directory.mkdir(parents=True, exist_ok=True)
        conf = self.write_conf()
        env = {**os.environ, **JVM, "PULSAR_LOG_DIR": str(self.root / "logs")}
        log = (self.root / "logs" / "stdout.log").open("ab")
        self.process = subprocess.Popen(
            [str(self.dist.home / "bin" / "pulsar"), "standalone", "-c", str(conf),
             "--no-functions-worker", "--no-stream-storage",
             "--zookeeper-port", str(self.zookeeper_port),
             "--zookeeper-dir", str(self.root / "data" / "zookeeper"),
             "--bookkeeper-port", str(self.bookie_port),
             "--bookkeeper-dir", str(self.bookie_dir),
             "--metadata-dir", str(self.root / "data" / "metadata")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        self._wait_healthy(timeout)
        return self

    @property
    def health_url(self) -> str:
        return f"{self.web_url}/admin/v2/brokers/health"

    def health_client(self) -> httpx.Client:
        """An HTTP client the broker lets ask for its health (a superuser's token, if any)."""
        headers = {"Authorization": f"Bearer {self.admin_token}"} if self.admin_token else {}
        return httpx.Client(timeout=5, trust_env=False, headers=headers)

    def _wait_healthy(self, timeout: float) -> None:
        """The broker's health check produces and consumes a message on its heartbeat topic."""
        deadline = time.monotonic() + timeout
        with self.health_client() as http:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"Pulsar exited; see {self.root / 'logs' / 'stdout.log'}")
                try:
                    if http.get(self.health_url).text == "ok":
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
        self.kill()
        raise RuntimeError(f"Pulsar was not healthy within {timeout:.0f}s; see {self.root}/logs")

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM to the whole group, SIGKILL after `grace` seconds."""
        self._signal(signal.SIGTERM, grace)

    def kill(self) -> None:
        """SIGKILL to the whole group: a crash, with nothing flushed or closed."""
        self._signal(signal.SIGKILL, 30.0)

    def restart(self) -> PulsarStandalone:
        """A cold restart on the same data: every managed ledger, cursor and schema is
        recovered from ZooKeeper and BookKeeper again."""
        self.stop()
        return self.start()

    def _signal(self, sent: signal.Signals, grace: float) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        try:
            os.killpg(process.pid, sent)
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        except ProcessLookupError:
            process.wait(timeout=30)
        # Anything else of the group (a forked helper) goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
