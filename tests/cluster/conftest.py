"""A real Pulsar cluster for these tests (harness/pulsar_cluster): 3 ZooKeepers, 3 bookies,
2 brokers, started once for the session from the distribution the suite fetches, and a
`ledger-janitor run -c <broker.conf>` next to each broker when a test starts it. Every test
gets a namespace of its own, under a tenant of its own.

The cluster's start-up (each step), its JVMs' resident memory and its stop are printed at the
end of the session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName
from harness.java import JavaPrograms
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster
from harness.pulsar_cluster.leaks import java_programs
from harness.zookeeper import kazoo_session

HERE = Path(__file__).parent
# What the session's cluster said of itself, for the terminal summary.
REPORTS: list[str] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Starting the cluster (in the first test) took 1 to 3 minutes, and an audit on Spark
    up to 12, on this 2-core machine at a load of 20 (other suites running)."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.timeout(1800))
            item.add_marker(pytest.mark.cluster)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for report in REPORTS:
        terminalreporter.write_sep("-", "the Pulsar cluster")
        terminalreporter.write_line(report)


# Package-scoped: stopped once the last cluster test is done, so its eight idle JVMs do not
# share the cores with the rest of the suite.
@pytest.fixture(scope="package")
def pulsar_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulsarCluster]:
    cluster = PulsarCluster(tmp_path_factory.mktemp("cluster")).start(timeout=300)
    started = cluster.report()
    try:
        yield cluster
    finally:
        cluster.stop()
        REPORTS.append(f"{started}\nstop: {cluster.timings['stop']:.1f} s")
        assert not cluster.forced, f"killed after SIGTERM's bound: {cluster.forced}"


@pytest.fixture(scope="package")
def cluster_admin(pulsar_cluster: PulsarCluster) -> Iterator[ClusterAdmin]:
    admin = ClusterAdmin(pulsar_cluster.web_url)
    yield admin
    admin.close()


@pytest.fixture
def cluster_namespace(cluster_admin: ClusterAdmin) -> NamespaceName:
    namespace = NamespaceName(f"lj-{uuid.uuid4().hex[:10]}", "ns")
    cluster_admin.create_namespace(namespace)
    return namespace


@pytest.fixture
def sidecars(pulsar_cluster: PulsarCluster) -> Iterator[PulsarCluster]:
    """The cluster, its sidecars stopped after the test whatever it left running."""
    yield pulsar_cluster
    for sidecar in pulsar_cluster.sidecars:
        sidecar.stop()


@pytest.fixture(scope="session")
def java(tmp_path_factory: pytest.TempPathFactory) -> JavaPrograms:
    """The tests' Java programs (LeakMaker), built against the distribution's own jars."""
    return java_programs(tmp_path_factory.mktemp("java"))


@pytest.fixture
def zk(pulsar_cluster: PulsarCluster) -> Iterator[KazooClient]:
    """The cluster's own ZooKeeper, raw: the ground truth of what ledgers exist."""
    with kazoo_session(pulsar_cluster.zookeeper_hosts) as session:
        yield session
