"""A real ZooKeeper server (Debian's `zookeeper` package) on a free loopback port."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from harness.pki import KeyPair, MutualPki, make_mutual_pki
from ledger_janitor.demo.embedded import free_port

JARS = (Path("/usr/share/java/zookeeper.jar"), Path("/usr/share/java/slf4j-simple.jar"))
# The Netty server connection factory, which TLS needs (Debian's libnetty-java).
NETTY_JARS = tuple(
    Path(f"/usr/share/java/netty-{name}.jar")
    for name in (
        "buffer",
        "codec",
        "common",
        "handler",
        "resolver",
        "transport",
        "transport-native-epoll",
        "transport-native-unix-common",
    )
)


@dataclass(frozen=True)
class ServerTls:
    """TLS only (no plain port), client certificates required: the server's PEM store
    (certificate and key), the CA it trusts, and a client store the harness connects with."""

    server_store: Path
    ca_file: Path
    client_store: Path

    def settings(self, port: int) -> str:
        return (
            f"secureClientPort={port}\nsecureClientPortAddress=127.0.0.1\n"
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
            f"ssl.keyStore.location={self.server_store}\nssl.keyStore.type=PEM\n"
            f"ssl.trustStore.location={self.ca_file}\nssl.trustStore.type=PEM\n"
            "ssl.clientAuth=need\n"
        )

    def client_options(self) -> dict[str, Any]:
        store = str(self.client_store)
        return {"use_ssl": True, "certfile": store, "keyfile": store, "ca": str(self.ca_file)}


def pem_store(pair: KeyPair) -> Path:
    """`pair` as one PEM store, certificate then key, as ZooKeeper's PEM keyStore wants."""
    store = pair.cert_file.with_name(pair.cert_file.name.replace(".cert.pem", ".store.pem"))
    store.write_bytes(pair.cert_file.read_bytes() + pair.key_file.read_bytes())
    return store


def make_server_tls(
    directory: Path, roles: tuple[str, ...] = ("janitor",)
) -> tuple[ServerTls, MutualPki]:
    """A CA, a server store for 127.0.0.1 and client pairs (`roles`, and a foreign CA's)."""
    pki = make_mutual_pki(directory, roles)
    tls = ServerTls(pem_store(pki.broker), pki.ca_file, pem_store(pki.clients[roles[0]]))
    return tls, pki


class ZooKeeperServer:
    def __init__(
        self, root: Path, port: int = 0, heap: str = "256m", tls: ServerTls | None = None
    ) -> None:
        """`heap` is the JVM's -Xmx: 256m holds the tests' trees; 200k ledgers need more.
        With `tls`, the port is a secureClientPort and there is no plain one."""
        self.root = root
        self.port = port or free_port()
        self.heap = heap
        self.tls = tls
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
        jars = JARS if self.tls is None else (*JARS, *NETTY_JARS)
        missing = [str(jar) for jar in jars if not jar.exists()]
        java = shutil.which("java")
        if missing or java is None:
            raise RuntimeError(
                "ZooKeeper needs Debian's zookeeper package and a JRE"
                f" (missing: {missing or 'java'}); scripts/test.sh installs them"
            )
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        port = (
            f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            if self.tls is None
            else self.tls.settings(self.port)
        )
        (self.root / "zoo.cfg").write_text(
            f"tickTime=500\ndataDir={self.root / 'data'}\n{port}"
            "admin.enableServer=false\nmaxSessionTimeout=60000\n"
        )
        classpath = ":".join([str(self.root), *map(str, jars)])
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
            options = {} if self.tls is None else self.tls.client_options()
            client = KazooClient(hosts=self.hosts, timeout=2, **options)
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


@contextmanager
def kazoo_session(hosts: str, timeout: float = 30) -> Iterator[KazooClient]:
    """A kazoo client of `hosts`, started (waiting up to twice `timeout`) and closed after."""
    client = KazooClient(hosts=hosts, timeout=timeout)
    client.start(timeout=2 * timeout)
    try:
        yield client
    finally:
        client.stop()
        client.close()


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
