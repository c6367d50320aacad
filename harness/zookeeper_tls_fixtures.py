"""A real ZooKeeper with TLS only and client certificates required, and the client
properties file (metadataStoreConfigPath) that reaches it; shared by the integration and
audit tests (tests/conftest.py lists this module in pytest_plugins)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.pki import MutualPki
from harness.zookeeper import ServerTls, ZooKeeperServer, make_server_tls

Secured = tuple[ZooKeeperServer, ServerTls, MutualPki]


@pytest.fixture(scope="session")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("zookeeper-tls")
    tls, pki = make_server_tls(root / "pki")
    server = ZooKeeperServer(root / "server", tls=tls).start()
    yield server, tls, pki
    server.stop()


def client_file(directory: Path, keystore: Path | None, truststore: Path) -> Path:
    """A ZooKeeper client properties file, as the broker's metadataStoreConfigPath names."""
    lines = [
        "zookeeper.client.secure=true",
        "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
    ]
    if keystore is not None:
        lines += [f"zookeeper.ssl.keyStore.location={keystore}", "zookeeper.ssl.keyStore.type=PEM"]
    lines += [
        f"zookeeper.ssl.trustStore.location={truststore}",
        "zookeeper.ssl.trustStore.type=PEM",
    ]
    path = directory / "zk-client.properties"
    path.write_text("\n".join(lines) + "\n")
    return path
