"""A real Apache Pulsar for these tests: the standalone started from Maven Central's
distribution (harness/pulsar_standalone.py), or an existing cluster named by
PULSAR_SERVICE_URL, PULSAR_ADMIN_URL and PULSAR_METADATA_STORE (a ZooKeeper the tests may
read and write: `zk:host:port`). Every test gets a namespace of its own, under a tenant of
its own."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName
from harness.java import JavaPrograms
from harness.pulsar_admin import BrokerAdmin
from harness.pulsar_dist import distribution
from harness.pulsar_standalone import PulsarStandalone
from harness.zookeeper import kazoo_session


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A real broker's work (restarts, audits on Spark) outlasts the suite's 120 s default."""
    for item in items:
        if item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.timeout(600))
            item.add_marker(pytest.mark.pulsar)


@dataclass
class RealPulsar:
    service_url: str
    web_url: str
    zookeeper_hosts: str
    standalone: PulsarStandalone | None = None  # None: an existing cluster, not ours to stop

    @property
    def metadata_url(self) -> str:
        return f"zk:{self.zookeeper_hosts}"

    def ours(self) -> PulsarStandalone:
        """The standalone this session started, for tests that restart or kill it."""
        if self.standalone is None:
            pytest.skip("restarts only the standalone this suite starts, not an existing one")
        return self.standalone


def _existing() -> RealPulsar | None:
    service, admin = os.environ.get("PULSAR_SERVICE_URL"), os.environ.get("PULSAR_ADMIN_URL")
    store = os.environ.get("PULSAR_METADATA_STORE", "")
    if not (service and admin):
        return None
    if not store.startswith("zk:"):
        raise pytest.UsageError("PULSAR_METADATA_STORE must name the cluster's ZooKeeper, zk:...")
    return RealPulsar(service, admin, store.removeprefix("zk:"))


# Package-scoped: the standalone stops once the last of these tests is done.
@pytest.fixture(scope="package")
def real_pulsar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealPulsar]:
    existing = _existing()
    if existing is not None:
        yield existing
        return
    standalone = PulsarStandalone(tmp_path_factory.mktemp("pulsar")).start()
    try:
        yield RealPulsar(
            standalone.service_url, standalone.web_url, standalone.zookeeper_hosts, standalone
        )
    finally:
        standalone.stop()


@pytest.fixture(scope="package")
def broker_admin(real_pulsar: RealPulsar) -> Iterator[BrokerAdmin]:
    admin = BrokerAdmin(real_pulsar.web_url)
    yield admin
    admin.close()


@pytest.fixture
def real_namespace(broker_admin: BrokerAdmin) -> NamespaceName:
    namespace = NamespaceName(f"lj-{uuid.uuid4().hex[:10]}", "ns")
    broker_admin.create_namespace(namespace)
    return namespace


@pytest.fixture
def pulsar_zk(real_pulsar: RealPulsar) -> Iterator[KazooClient]:
    """The cluster's own ZooKeeper, as ground truth (`/ledgers`, `/managed-ledgers`, ...)."""
    with kazoo_session(real_pulsar.zookeeper_hosts) as session:
        yield session


@pytest.fixture(scope="session")
def java(tmp_path_factory: pytest.TempPathFactory) -> JavaPrograms:
    """The tests' Java programs (`java/`), compiled against the distribution's own jars."""
    sources = Path(__file__).parent / "java"
    return JavaPrograms(sources, tmp_path_factory.mktemp("java"), distribution()).compile()


@pytest.fixture
def client_log(tmp_path: Path) -> Path:
    return tmp_path / "client.log"
