"""A real ZooKeeper server (Debian's `zookeeper` package) on a free loopback port."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from ledger_janitor.demo.embedded import free_port

JARS = (Path("/usr/share/java/zookeeper.jar"), Path("/usr/share/java/slf4j-simple.jar"))


class ZooKeeperServer:
    def __init__(self, root: Path, port: int = 0, heap: str = "256m") -> None:
        """`heap` is the JVM's -Xmx: 256m holds the tests' trees; 200k ledgers need more."""
        self.root = root
        self.port = port or free_port()
        self.heap = heap
        self.process: subprocess.Popen[bytes] | None = None

    @classmethod
    def running_at(cls, hosts: str) -> ZooKeeperServer:
        """A server started elsewhere, on `127.0.0.1:port`; stopping it is left to its owner."""
        host, _, port = hosts.rpartition(":")
        if host != "127.0.0.1" or not port.isdigit():
            raise ValueError(f"expected 127.0.0.1:port, got {hosts!r}")
        return cls(Path(), int(port))

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        missing = [str(jar) for jar in JARS if not jar.exists()]
        java = shutil.which("java")
        if missing or java is None:
            raise RuntimeError(
                "ZooKeeper needs Debian's zookeeper package and a JRE"
                f" (missing: {missing or 'java'}); scripts/test.sh installs them"
            )
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        (self.root / "zoo.cfg").write_text(
            f"tickTime=500\ndataDir={self.root / 'data'}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxSessionTimeout=60000\n"
        )
        classpath = ":".join([str(self.root), *map(str, JARS)])
        log = (self.root / "zookeeper.log").open("ab")
        self.process = subprocess.Popen(
            [
                java,
                f"-Xmx{self.heap}",
                "-cp",
                classpath,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(self.root / "zoo.cfg"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited; see {self.root / 'zookeeper.log'}")
            client = KazooClient(hosts=self.hosts, timeout=2)
            try:
                client.start(timeout=1)
                return
            except Exception:
                time.sleep(0.1)
            finally:
                client.stop()
                client.close()
        raise RuntimeError(f"ZooKeeper did not accept sessions within {timeout}s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=15)
            self.process = None


def spy_requests(client: KazooClient) -> list[str]:
    """The kind of each request `client` sends from now on (its serialization class name:
    "MultiRead", "Transaction", "Delete", ...), as it hands them to its connection."""
    sent: list[str] = []
    call = client._call

    def spied(request: Any, reply: Any) -> Any:
        sent.append(type(request).__name__)
        return call(request, reply)

    client._call = spied
    return sent
