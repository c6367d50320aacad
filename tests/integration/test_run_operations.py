"""`ledger-janitor run` as an operator meets it: a bounded SIGTERM whatever is down, one
`error:` line for a metrics port it cannot open, a start-up line saying what it uses, its
logs (the Pulsar client's too) structured on stderr with stdout clean, /ready's meaning, and
/metrics."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deletion.domain.topics import NamespaceName, TopicName
from harness.http import serving
from harness.janitor import Backend, JanitorFactory, embedded_store, zookeeper_backend
from harness.process import wait_until
from harness.pulsar_lite import skip_consumer_ids
from harness.zookeeper import ZooKeeperServer
from ledger_janitor import __version__
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port
from ledger_janitor.demo.seeding import TopicSeeder, pending
from ledger_janitor.sidecar.run import SHUTDOWN_SECONDS
from tests.integration.run_rig import running, settings
from tests.reliability.zk_faults import LedgerZnodes

# Interpreter start-up and exit around the bounded shutdown itself.
EXIT_SLACK_SECONDS = 2.0
# /ready turns 503 this soon after ZooKeeper goes away (the check runs every second).
READY_BOUND_SECONDS = 5.0
# Long enough for ZooKeeper to be stopped before the message is due.
DELAY = 20


@pytest.fixture
def zk_backend(private_zookeeper: ZooKeeperServer, chroot: str) -> Iterator[Backend]:
    backend = zookeeper_backend(private_zookeeper.hosts, chroot)
    yield backend
    backend.ledgers.close()


def test_sigterm_with_zookeeper_down_is_bounded_and_loses_nothing(
    private_zookeeper: ZooKeeperServer,
    chroot: str,
    zk_backend: Backend,
    broker: EmbeddedBroker,
    namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    seeder = TopicSeeder(zk_backend.metadata, zk_backend.factory)
    seeded = seeder.seed(TopicName(namespace, "bounded"), ledgers=3)
    target = seeded.ledgers[0]
    args = [
        "--metadata-store",
        zk_backend.metadata_url,
        "--broker-url",
        broker.service_url,
        *settings(deletionNamespaces=namespace, sendDelaySecondsOfTwoPhaseDeletion=DELAY),
    ]
    janitor = JanitorFactory(zk_backend, broker.service_url, tmp_path)
    try:
        sidecar = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=DELAY)
        skip_consumer_ids(sidecar.client, 100)  # pulsar-lite: ids apart from the run's
        phase_one = sidecar.phase_one
        with running(*args) as run:
            wait_until(lambda: run.status("/ready") == 200, 60, "readiness")
            phase_one.enqueue_then_commit(
                [pending(seeded.topic, target)], lambda: seeder.release(seeded, [target])
            )
            received = "ledger_janitor_messages_received_total"
            ns = str(namespace)
            wait_until(lambda: (run.sample(received, namespace=ns) or 0) >= 1, 30, "receipt")
            private_zookeeper.stop()
            lost = time.monotonic()
            wait_until(lambda: run.status("/ready") == 503, READY_BOUND_SECONDS, "503")
            assert time.monotonic() - lost < READY_BOUND_SECONDS
            assert run.said("metadata store lost", "warning")
            # Due now, and its handler waits on the ZooKeeper that is gone.
            age = "ledger_janitor_oldest_held_message_age_seconds"
            wait_until(lambda: (run.sample(age) or 0) > 0, 60, "a batch in flight")
            seconds = run.terminate()
        assert seconds < SHUTDOWN_SECONDS + EXIT_SLACK_SECONDS, seconds
        events = [event["event"] for event in run.events()]
        assert "stopping; finishing in-flight deletions" in events and "stopped" in events
        assert not any("Traceback" in line for line in run.stderr)

        private_zookeeper.start()  # the message was left unacked: the next run handles it
        # The ground truth on a session of its own: the test's earlier one may have expired
        # while ZooKeeper was down (a slow machine takes long enough).
        truth = LedgerZnodes(private_zookeeper.hosts + chroot)
        try:
            with running(*args) as again:
                wait_until(lambda: target not in truth.paths(), 90, "the deletion after restart")
                again.terminate()
            assert set(seeded.referenced()) <= set(truth.paths())
        finally:
            truth.client.stop()
            truth.client.close()
    finally:
        janitor.close()


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("metricsPort", "error: metrics port 127.0.0.1:{port} is in use"),
        # An address that resolves (the configuration accepts it) but is not this machine's.
        ("metricsBindAddress=192.0.2.1", "error: metrics bind address 192.0.2.1 is not an"),
    ],
)
def test_metrics_port_that_cannot_be_opened_is_one_error_line(
    setting: str, said: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        extra = [] if setting == "metricsPort" else ["--set", setting]
        store = f"sqlite:{tmp_path / 'janitor.db'}"
        with running("--metadata-store", store, *extra, port=port) as run:
            assert run.process.wait(timeout=60) == 2
    wait_until(lambda: bool(run.stderr), 5, "stderr")
    assert len(run.stderr) == 1, run.stderr
    assert run.stderr[0].startswith(said.format(port=port)), run.stderr
    assert run.stdout == []


def test_run_without_arguments_says_what_it_uses(tmp_path: Path) -> None:
    with running(cwd=tmp_path) as run:
        wait_until(lambda: run.said("starting"), 30, "the start-up line")
        wait_until(lambda: run.said("creating the embedded SQLite store"), 10, "the warning")
        run.terminate()
    start = next(event for event in run.events() if "starting" in event["event"])
    assert start["event"].startswith(f"ledger-janitor {__version__} starting: ")
    assert start["version"] == __version__
    assert start["metadata_store"] == "sqlite:ledger-janitor.db"
    assert start["ledger_storage"] == "sqlite:ledger-janitor.db"
    assert start["broker_url"] == "pulsar://127.0.0.1:6650"
    assert start["admin_url"] is None
    assert start["namespaces"] == "every namespace with a deletion topic"
    warning = next(event for event in run.events() if "creating the embedded" in event["event"])
    assert warning["level"] == "warning"
    assert str(tmp_path / "ledger-janitor.db") in warning["event"]


def test_broker_loss_and_recovery_are_logged_once_and_stdout_stays_clean(
    tmp_path: Path, namespace: NamespaceName
) -> None:
    broker = EmbeddedBroker(tmp_path / "broker", port=free_port()).start()
    try:
        args = ["--metadata-store", embedded_store(tmp_path / "janitor.db")]
        args += ["--broker-url", broker.service_url, *settings(deletionNamespaces=namespace)]
        with running(*args) as run:
            wait_until(lambda: run.status("/ready") == 200, 60, "readiness")
            broker.stop()
            wait_until(lambda: run.said("broker lost", "warning"), 15, "the loss")
            wait_until(lambda: run.status("/ready") == 503, 15, "not ready")
            broker.start()
            wait_until(lambda: run.said("broker reachable again", "info"), 90, "the recovery")
            wait_until(lambda: run.status("/ready") == 200, 15, "ready again")
            run.terminate()
    finally:
        broker.stop()
    assert run.stdout == [], run.stdout  # the Pulsar client's own lines come through ours
    assert all(line.startswith("{") for line in run.stderr), run.stderr
    events = run.events()
    assert any(event["logger"] == "pulsar.client" for event in events)
    assert sum(event["event"] == "broker lost" for event in events) == 1
    assert sum(event["event"] == "broker reachable again" for event in events) == 1


def _admin(backlog: int) -> Any:
    def respond(method: str, path: str) -> tuple[int, Any]:
        if method == "GET" and path.endswith("/__ledger_deletion_archive/stats"):
            return 200, {"subscriptions": {"ledger-janitor-archive": {"msgBacklog": backlog}}}
        return (404, {"reason": "not here"}) if method == "GET" else (204, None)

    return respond


def test_metrics_of_a_running_sidecar(
    zookeeper: ZooKeeperServer,
    chroot: str,
    broker: EmbeddedBroker,
    namespace: NamespaceName,
    tmp_path: Path,
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    janitor = JanitorFactory(backend, broker.service_url, tmp_path)
    try:
        seeder = TopicSeeder(backend.metadata, backend.factory)
        seeded = seeder.seed(TopicName(namespace, "held"), ledgers=2)
        phase_one = janitor.sidecar(send_delay_seconds_of_two_phase_deletion=3600).phase_one
        phase_one.enqueue([pending(seeded.topic, seeded.ledgers[0])])  # due in an hour: held
        with serving(_admin(backlog=7)) as admin_url:
            args = ["--metadata-store", backend.metadata_url, "--broker-url", broker.service_url]
            args += settings(deletionNamespaces=namespace, webServiceUrl=admin_url)
            with running(*args) as run:
                ns = str(namespace)
                wait_until(lambda: run.sample("ledger_janitor_ready") == 1, 60, "ready")
                held = "ledger_janitor_messages_held"
                wait_until(lambda: run.sample(held, namespace=ns) == 1, 30, "the held message")
                backlog = "ledger_janitor_archive_backlog"
                wait_until(lambda: run.sample(backlog, namespace=ns) == 7, 30, "the backlog")
                samples = run.scrape()
                assert run.status("/ready") == 200
                run.terminate()
    finally:
        janitor.close()
        backend.ledgers.close()
    names = {name for name, _ in samples}
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "python_info"} <= names
    assert "python_gc_objects_collected_total" in names
    assert samples[("ledger_janitor_build_info", (("version", __version__),))] == 1
    for name in ("up", "ready", "broker_connected", "metadata_store_reachable"):
        assert samples[(f"ledger_janitor_{name}", ())] == 1, name
    assert samples[("ledger_janitor_watched_namespaces", ())] == 1
    assert samples[("ledger_janitor_oldest_held_message_age_seconds", ())] == 0
    assert samples[("ledger_janitor_messages_received_total", (("namespace", ns),))] >= 1
