"""The embedded broker: the pulsar-lite binary from PyPI, on a free loopback port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from core.errors import BrokerError
from ledger_janitor import install_hint


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_binary() -> Path:
    try:
        import pulsar_lite
    except ImportError as exc:
        raise BrokerError(
            "the embedded broker needs pulsar-lite: " + install_hint("embedded")
        ) from exc
    bundled = Path(pulsar_lite.__file__).parent / "bin" / "pulsar-lite"
    if bundled.exists():
        return bundled
    found = shutil.which("pulsar-lite")
    if found is None:
        raise BrokerError("pulsar-lite is installed but its binary was not found")
    return Path(found)


@dataclass
class EmbeddedBroker:
    """A pulsar-lite process; `partitions` is the default for auto-created topics."""

    data_dir: Path
    partitions: int = 4
    process: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> EmbeddedBroker:
        """Start the process; a no-op while it runs, so that `with broker.start():` (which
        enters, and so starts, once more) cannot orphan a second one."""
        if self.process is not None and self.process.poll() is None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        config = self.data_dir / "pulsar-lite.toml"
        # Its metrics endpoint defaults to 0.0.0.0:8080; keep it on loopback and free.
        config.write_text(
            f'default_partitions = {self.partitions}\n[metrics]\naddr = "127.0.0.1:{free_port()}"\n'
        )
        with (self.data_dir / "broker.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(find_binary()),
                    "--addr",
                    f"127.0.0.1:{self.port}",
                    "--db-path",
                    str(self.data_dir / "db"),
                    "--config",
                    str(config),
                    "--log-level",
                    "warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
            )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise BrokerError(
                    f"pulsar-lite exited with {self.process.returncode};"
                    f" see {self.data_dir}/broker.log"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise BrokerError(f"pulsar-lite did not listen on port {self.port} within {timeout}s")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
