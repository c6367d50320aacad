"""Session-scoped real services: ZooKeeper, etcd and a pulsar-lite broker on loopback.

Each test gets its own ZooKeeper chroot, SQLite file and Pulsar tenant. No test may leave a
process behind: the session fails if one of its processes outlives it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from config import parse_store_url
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore, connect_client
from deletion.domain.topics import NamespaceName
from harness.etcd import EtcdServer, etcd_backend
from harness.janitor import (
    Backend,
    JanitorFactory,
    make_chroot,
    sqlite_backend,
    zookeeper_backend,
)
from harness.leaks import SESSION_ENV, survivors
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker

# A ZooKeeper someone else runs and stops (bench/mutation.py shares one across its forked
# test runs, so that a run killed on a time-out leaves no server behind).
EXTERNAL_ZOOKEEPER_ENV = "LEDGER_JANITOR_TEST_ZOOKEEPER"

# Fixtures shared across folders: the cursor tests', and the ZooKeeper TLS server.
pytest_plugins = ["harness.cursor_fixtures", "harness.zookeeper_tls_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    # Inherited by every process the session starts, and by theirs: see harness/leaks.py.
    # Fresh per session, so that a concurrent or nested session's processes are not ours.
    os.environ[SESSION_ENV] = uuid.uuid4().hex


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Set up before, so torn down after, every other session fixture (the ZooKeeper, broker
    and Spark that are meant to live as long as the session have been stopped by then)."""
    yield
    left = survivors(SESSION_ENV, os.environ[SESSION_ENV], grace_seconds=10)
    for process in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
    if left:
        pytest.fail(
            "processes started by the tests outlived them (now killed):\n"
            + "\n".join(map(str, left)),
            pytrace=False,
        )


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    external = os.environ.get(EXTERNAL_ZOOKEEPER_ENV)
    if external:
        yield ZooKeeperServer.running_at(external)
        return
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    server = EtcdServer(tmp_path_factory.mktemp("etcd")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("pulsar-lite"), partitions=4) as embedded:
        yield embedded


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A pulsar-lite of this test's own, for tests that stop it (SIGSTOP) or kill it."""
    with EmbeddedBroker(tmp_path / "own-broker", partitions=4) as embedded:
        yield embedded


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A real S3-compatible server (moto's server mode) on loopback."""
    from moto.server import ThreadedMotoServer

    from ledger_janitor.demo.embedded import free_port

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def janitor(backend: Backend, broker: EmbeddedBroker, tmp_path: Path) -> Iterator[JanitorFactory]:
    factory = JanitorFactory(backend, broker.service_url, tmp_path)
    yield factory
    factory.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Backend]:
    """The embedded default's SQLite stores, in the test's own file; closed after."""
    backend = sqlite_backend(str(tmp_path / "janitor.db"))
    yield backend
    backend.ledgers.close()
    backend.metadata.close()


@pytest.fixture
def embedded(
    broker: EmbeddedBroker, sqlite_store: Backend, tmp_path: Path
) -> Iterator[JanitorFactory]:
    """The embedded default alone: SQLite stores and the shared pulsar-lite broker."""
    factory = JanitorFactory(sqlite_store, broker.service_url, tmp_path)
    yield factory
    factory.close()


@pytest.fixture
def namespace() -> NamespaceName:
    return NamespaceName(f"t{uuid.uuid4().hex[:10]}", "ns")


@pytest.fixture
def chroot() -> str:
    return f"/test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def private_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    """A ZooKeeper server of this test's own, for tests that stop it."""
    server = ZooKeeperServer(tmp_path / "private-zookeeper").start()
    yield server
    server.stop()


@pytest.fixture
def lost_store(private_zookeeper: ZooKeeperServer) -> Iterator[ZooKeeperMetadataStore]:
    """A store connected (2 s time-outs) to a private server, which the test stops."""
    store = ZooKeeperMetadataStore.connect(
        parse_store_url(f"zk:{private_zookeeper.hosts}"), timeout=2
    )
    yield store
    store.close()


@pytest.fixture
def zk_client(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[KazooClient]:
    """A started kazoo client in this test's own chroot (made, and laid out as a Pulsar
    cluster's: harness.janitor.make_chroot), as the product connects one."""
    make_chroot(zookeeper.hosts, chroot)
    started = connect_client(zookeeper.hosts, chroot)
    yield started
    started.stop()
    started.close()


@pytest.fixture(params=["sqlite", "zookeeper", "etcd"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, chroot: str) -> Iterator[Backend]:
    """Every test on a backend runs on each metadata store Pulsar uses that runs here."""
    if request.param == "sqlite":
        chosen = sqlite_backend(str(tmp_path / "janitor.db"))
    elif request.param == "etcd":
        chosen = etcd_backend(request.getfixturevalue("etcd"))
    else:
        chosen = zookeeper_backend(request.getfixturevalue("zookeeper").hosts, chroot)
    yield chosen
    chosen.ledgers.close()
    if chosen.name == "sqlite":
        chosen.metadata.close()  # the BookKeeper adapter closes the shared ZooKeeper store
