"""A real etcd server (Debian's `etcd-server` package) on free loopback ports.

Pulsar's etcd layout has no chroot (the key is the path), so tests cannot each take a subtree
as they take a ZooKeeper chroot: `etcd_backend` empties the keyspace instead. Tests on one
server therefore run one at a time, as pytest runs them (one server per session).
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
from pathlib import Path

import httpx

from harness.janitor import Backend, ZkLedgerFactory, lay_out_cluster
from ledger_janitor.demo.embedded import free_port

BINARY = "/usr/bin/etcd"


class EtcdServer:
    def __init__(self, root: Path, port: int = 0) -> None:
        self.root = root
        self.port = port or free_port()
        self.peer_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The metadata-store URL, in Pulsar's form."""
        return f"etcd:{self.endpoint}"

    def start(self, timeout: float = 30.0) -> EtcdServer:
        binary = shutil.which("etcd") or BINARY
        if not Path(binary).exists():
            raise RuntimeError(
                "etcd needs Debian's etcd-server package; scripts/test.sh installs it"
            )
        peer = f"http://127.0.0.1:{self.peer_port}"
        log = (self.root / "etcd.log").open("ab")
        self.process = subprocess.Popen(
            [
                binary,
                "--name=janitor-test",
                f"--data-dir={self.root / 'data'}",
                f"--listen-client-urls={self.endpoint}",
                f"--advertise-client-urls={self.endpoint}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=janitor-test={peer}",
                "--logger=zap",
                "--log-outputs=stderr",
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
                raise RuntimeError(f"etcd exited; see {self.root / 'etcd.log'}")
            try:
                if httpx.get(f"{self.endpoint}/health", timeout=1).json().get("health") == "true":
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.1)  # another process: nothing to wait on but its port
        raise RuntimeError(f"etcd did not become healthy within {timeout}s")

    def wipe(self) -> None:
        """Delete every key: the range from "\\0" to "\\0" is the whole keyspace."""
        everything = base64.b64encode(b"\0").decode()
        reply = httpx.post(
            f"{self.endpoint}/v3/kv/deleterange",
            json={"key": everything, "range_end": everything},
            timeout=10,
        )
        reply.raise_for_status()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
            self.process = None


def etcd_backend(server: EtcdServer, first_ledger_id: int = 1) -> Backend:
    """Ledgers as BookKeeper keeps them on Pulsar's etcd store: the same `/ledgers/...` paths
    (Pulsar's PulsarLedgerManager), over the etcd adapter. Starts from an empty keyspace."""
    from config import parse_store_url
    from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
    from deletion.adapters.stores.etcd import EtcdMetadataStore

    server.wipe()
    store = EtcdMetadataStore.connect(parse_store_url(server.url))
    lay_out_cluster(store)
    return Backend(
        "etcd",
        server.url,
        store,
        BookKeeperLedgerStorage(store),
        ZkLedgerFactory(store, first_ledger_id),
    )
