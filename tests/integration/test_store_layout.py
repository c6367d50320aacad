"""A store the operator names wrongly loses no pending deletion and deletes nothing.

Run as an operator runs the commands (`ledger-janitor run`, `enqueue`, in processes of their
own), next to a real ZooKeeper: a typo in the chroot (nothing is created, /ready says why,
the pending deletion stays for a correctly configured sidecar); a metadata store of another
cluster beside the right ledger store (a topic absent there is unknown, never deleted);
BookKeeper's LAYOUT removed under a running sidecar (no "already gone" while it is missing).
What exists is read with kazoo, never through the product's readers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from harness.janitor import Backend, zookeeper_backend
from harness.process import run_cli, wait_until
from harness.zookeeper import ZooKeeperServer, kazoo_session
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port
from ledger_janitor.demo.seeding import SeededTopic, TopicSeeder

FAST = {
    "sendDelaySecondsOfTwoPhaseDeletion": 1,
    "reconsumeLaterSecondsOfTwoPhaseDeletion": 1,
    "maxReconsumeTimesOfTwoPhaseDeletion": 2,
    "clockSkewAllowanceSecondsOfTwoPhaseDeletion": 0,
    "minLedgerAgeSecondsOfTwoPhaseDeletion": 0,
    "inUseLedgersCacheTtlSeconds": 0,
}


@dataclass
class Sidecar:
    """`ledger-janitor run` in its own process: its log lines, its /ready."""

    process: subprocess.Popen[str]
    port: int
    lines: list[str] = field(default_factory=list)

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in list(self.lines) if line.startswith("{")]

    def said(self, event: str, ledger_id: int | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events()
            if event in e["event"] and (ledger_id is None or e.get("ledger_id") == ledger_id)
        ]

    def saw(self, event: str, ledger_id: int | None = None) -> bool:
        return bool(self.said(event, ledger_id))

    def ready(self) -> tuple[int, str]:
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.port}/ready", timeout=2)
        except httpx.TransportError:
            return 0, ""
        return answer.status_code, answer.text

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=60) == 0, "".join(self.lines)


@pytest.fixture
def sidecars() -> Iterator[list[Sidecar]]:
    started: list[Sidecar] = []
    yield started
    for sidecar in started:
        if sidecar.process.poll() is None:
            sidecar.process.kill()
            sidecar.process.wait()


def start(started: list[Sidecar], store: str, broker: str, **settings: object) -> Sidecar:
    port = free_port()
    pairs = {**FAST, "metricsPort": port, **settings}
    overrides = [arg for key, value in pairs.items() for arg in ("--set", f"{key}={value}")]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ledger_janitor",
            "run",
            "-v",  # each message's outcome: what the tests judge
            "--metadata-store",
            store,
            "--broker-url",
            broker,
            *overrides,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    sidecar = Sidecar(process, port)
    stream = process.stderr
    assert stream is not None
    threading.Thread(
        target=lambda: sidecar.lines.extend(iter(stream.readline, "")), daemon=True
    ).start()
    started.append(sidecar)
    return sidecar


def trimmed_topic(backend: Backend, namespace: NamespaceName) -> tuple[SeededTopic, int]:
    """A topic of three ledgers whose first was trimmed off its list (unreferenced now, and
    below what its creator has recorded since): deletable once its deletion is due."""
    seeder = TopicSeeder(backend.metadata, backend.factory)
    seeded = seeder.seed(TopicName(namespace, "orders"), ledgers=3)
    released = seeded.ledgers[0]
    seeder.release(seeded, [released])
    return seeded, released


def enqueue(topic: TopicName, ledger_id: int, store: str, broker: str, delay: int = 1) -> None:
    done = run_cli(
        "enqueue", str(topic), str(ledger_id), "--metadata-store", store,
        "--broker-url", broker, "--set", f"sendDelaySecondsOfTwoPhaseDeletion={delay}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def exists(client: KazooClient, chroot: str, ledger_id: int) -> bool:
    return client.exists(chroot + bk.ledger_path(ledger_id)) is not None


@pytest.fixture
def root_client(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    with kazoo_session(zookeeper.hosts) as session:
        yield session


def test_run_on_a_mistyped_chroot_creates_nothing_and_loses_no_pending_deletion(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    root_client: KazooClient,
    sidecars: list[Sidecar],
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    try:
        seeded, released = trimmed_topic(backend, namespace)
    finally:
        backend.ledgers.close()
    right = f"zk:{zookeeper.hosts}{chroot}"
    typo = f"zk:{zookeeper.hosts}{chroot}-typo"
    enqueue(seeded.topic, released, right, broker.service_url)

    wrong = start(sidecars, typo, broker.service_url, deletionNamespaces=namespace)
    reason = f"no /ledgers/LAYOUT in ZooKeeper at {zookeeper.hosts}{chroot}-typo: wrong store"
    # Not ready, saying why (the old code made the chroot and was ready, acking as "gone").
    wait_until(lambda: wrong.ready()[0] == 200 or reason in wrong.ready()[1], 60, "an answer")
    status, detail = wrong.ready()
    assert (status, reason in detail) == (503, True), (status, detail)
    # Said once, as an error, while it is re-checked (1 s, 2 s, 4 s apart): an observation
    # window, not a synchronization.
    time.sleep(4)
    errors = [e for e in wrong.events() if e["level"] == "error"]
    assert len(errors) == 1 and reason in errors[0]["event"], wrong.lines
    assert wrong.ready()[0] == 503 and wrong.process.poll() is None  # waiting, not exited
    assert not wrong.said("already_gone") and not wrong.said("subscribed")
    wrong.stop()
    assert root_client.exists(chroot + "-typo") is None  # no chroot was made
    assert exists(root_client, chroot, released)

    # The pending deletion is still there: a sidecar on the right store deletes the ledger.
    fixed = start(sidecars, right, broker.service_url, deletionNamespaces=namespace)
    wait_until(lambda: fixed.saw("deleted", released), 90, "the deletion")
    assert not exists(root_client, chroot, released)
    assert all(exists(root_client, chroot, kept) for kept in seeded.ledgers)
    fixed.stop()


def test_enqueue_to_a_sqlite_file_that_does_not_exist_is_refused_and_makes_nothing(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    named = tmp_path / "nonexistent" / "x.db"
    done = run_cli(
        "enqueue", "public/default/t", "5", "--metadata-store", f"sqlite:{named}",
        "--broker-url", broker.service_url,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    # the ledger store is the metadata store's file unless bookkeeperMetadataServiceUri says
    assert re.match(rf"error: no embedded (ledger|metadata) store at {named}\b", done.stderr)
    assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
    assert not named.parent.exists()


def test_a_metadata_store_of_another_cluster_makes_no_topic_deleted(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    root_client: KazooClient,
    sidecars: list[Sidecar],
) -> None:
    """metadataStoreUrl names another cluster's chroot (laid out, but without this topic's
    namespace) while bookkeeperMetadataServiceUri names the right one: the topic reads as
    absent there, which proves nothing. Its referenced ledger is never deleted."""
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    other = zookeeper_backend(zookeeper.hosts, chroot + "-other")
    try:
        seeded = TopicSeeder(backend.metadata, backend.factory).seed(
            TopicName(namespace, "orders"), ledgers=5
        )
        TopicSeeder(other.metadata, other.factory).seed(
            TopicName(NamespaceName("public", "default"), "elsewhere"), ledgers=1
        )
    finally:
        backend.ledgers.close()
        other.ledgers.close()
    referenced = seeded.ledgers[-1]
    right = f"zk:{zookeeper.hosts}{chroot}"
    enqueue(seeded.topic, referenced, right, broker.service_url)
    sidecar = start(
        sidecars,
        f"zk:{zookeeper.hosts}{chroot}-other",
        broker.service_url,
        deletionNamespaces=namespace,
        bookkeeperMetadataServiceUri=f"zk+hierarchical://{zookeeper.hosts}{chroot}/ledgers",
    )
    wait_until(
        lambda: sidecar.saw("deleted", referenced) or sidecar.saw("archived", referenced),
        120,
        "the message settled",
    )
    assert not sidecar.said("deleted", referenced), sidecar.lines
    assert exists(root_client, chroot, referenced)
    (archived,) = sidecar.said("archived", referenced)
    assert f"/admin/policies/{namespace}" in archived["reason"], archived
    assert "unknown" in archived["reason"]
    sidecar.stop()


def test_layout_removed_under_a_running_sidecar_acks_nothing_as_gone(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    root_client: KazooClient,
    sidecars: list[Sidecar],
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    try:
        seeded, released = trimmed_topic(backend, namespace)
    finally:
        backend.ledgers.close()
    url = f"zk:{zookeeper.hosts}{chroot}"
    sidecar = start(
        sidecars,
        url,
        broker.service_url,
        deletionNamespaces=namespace,
        maxReconsumeTimesOfTwoPhaseDeletion=30,  # retried until the layout is back
    )
    wait_until(lambda: sidecar.ready()[0] == 200, 90, "readiness")
    # Due in 10 s: time enough to take the layout away first (`enqueue` refuses a store
    # without it, as every command does).
    enqueue(seeded.topic, released, url, broker.service_url, delay=10)
    layout = f"{chroot}/ledgers/LAYOUT"
    data, _ = root_client.get(layout)
    root_client.delete(layout)
    root_client.delete(chroot + bk.ledger_path(released))  # gone, as far as anyone can tell
    wait_until(
        lambda: (
            len(sidecar.said("reconsumed", released)) >= 2 or sidecar.saw("already_gone", released)
        ),
        60,
        "two reconsumes (or an ack)",
    )
    assert not sidecar.said("already_gone", released), sidecar.lines
    wait_until(lambda: sidecar.ready()[0] == 503, 30, "not ready")
    assert "no /ledgers/LAYOUT" in sidecar.ready()[1]
    assert all("no /ledgers/LAYOUT" in e["reason"] for e in sidecar.said("reconsumed", released))
    root_client.create(layout, data)  # BookKeeper's store again: now it is gone, and acked
    wait_until(lambda: sidecar.saw("already_gone", released), 60, "the ack")
    wait_until(lambda: sidecar.ready()[0] == 200, 30, "ready again")
    sidecar.stop()
