"""No command of ours leaves a ledger behind on the real broker.

Each command that touches a deletion, retry or archive topic is run as an operator runs it (a
process of its own) on fresh namespaces, and an independent census (tests/real_pulsar/
census.py: BookKeeper's `/ledgers` read raw, the broker's internalStats and schema locators)
is taken before and after each: every ledger whose custom metadata names a topic of these
namespaces must be referenced by the broker once the command is done and its topics are idle.

`run`'s first start used to leave 1 to 7 schema ledgers of the deletion topic unreferenced
(its worker's consumers on the partitions each put the schema at once: see
transport/schema_registration.py): 7 of 10 first starts at 8 partitions, 2 of 6 at the
default 4. Two namespaces of 8 partitions each: every run of this test saw it before the fix.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from deletion.domain.topics import DELETION_TOPIC, SUBSCRIPTION, NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.process import run_cli, start_sidecar
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.census import Census, describe
from tests.real_pulsar.conftest import RealPulsar

PARTITIONS = 8
# The broker's own topic-policies topic: see test_without_the_admin_api_...
CHANGE_EVENTS = "__change_events"


def _fresh(admin: BrokerAdmin, name: str) -> NamespaceName:
    namespace = NamespaceName(f"lj-{uuid.uuid4().hex[:10]}", name)
    admin.create_namespace(namespace)
    return namespace


class Operator:
    """The commands as an operator types them, with or without the broker's admin API."""

    def __init__(self, pulsar_: RealPulsar, with_admin: bool = True) -> None:
        self.pulsar = pulsar_
        self.settings: dict[str, object] = {
            "ledgerDeletionParallelismOfTwoPhaseDeletion": PARTITIONS,
            "sendDelaySecondsOfTwoPhaseDeletion": 1,
            "reconsumeLaterSecondsOfTwoPhaseDeletion": 1,
            "maxReconsumeTimesOfTwoPhaseDeletion": 2,
            # The age rule at its default: a command just connected waits this out first.
            "metadataStoreSessionTimeoutMillis": 3000,
        }
        if with_admin:
            self.settings["webServiceUrl"] = pulsar_.web_url

    def cli(
        self, *args: str, timeout: float = 120, exits: tuple[int, ...] = (0,)
    ) -> subprocess.CompletedProcess[str]:
        common = ["--metadata-store", self.pulsar.metadata_url,
                  "--broker-url", self.pulsar.service_url]  # fmt: skip
        overrides = [a for k, v in self.settings.items() for a in ("--set", f"{k}={v}")]
        done = run_cli(*args, *common, *overrides, timeout=timeout,
                       env={"SPARK_LOCAL_IP": "127.0.0.1"})  # fmt: skip
        assert done.returncode in exits, f"{args[0]} exited {done.returncode}: {done.stderr}"
        return done

    def run(self, namespaces: list[NamespaceName]) -> Run:
        watched = ",".join(map(str, namespaces))
        return Run(self.pulsar, {**self.settings, "deletionNamespaces": watched})


class Run:
    """`ledger-janitor run`, its stderr read as it comes (for the report if it fails)."""

    def __init__(self, pulsar_: RealPulsar, settings: dict[str, object]) -> None:
        self.process = start_sidecar(pulsar_.metadata_url, pulsar_.service_url, **settings)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        self.lines.extend(self.process.stderr)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)
        self._reader.join(timeout=10)
        assert self.process.returncode == 0, "".join(self.lines[-30:])


class Leaks:
    """The census after each step, against what was there before it: each step answers for
    the ledgers it left."""

    def __init__(self, census: Census) -> None:
        self.census = census
        self.known = census.orphans()
        self.found: dict[str, str] = {}

    def after(self, step: str) -> None:
        new = self.census.orphans(known=self.known)
        print(f"{time.strftime('%H:%M:%S')} {step}: {describe(new) or 'no new orphan'}")
        if new:
            self.found[step] = describe(new)
        self.known.update(new)

    def none(self) -> None:
        assert not self.found, "\n".join(f"{step}: {new}" for step, new in self.found.items())


def _consumers(admin: BrokerAdmin, topic: TopicName) -> int:
    stats = admin.get(f"{admin.topic_path(topic)}/stats", 404) or {}
    return len(stats.get("subscriptions", {}).get(SUBSCRIPTION, {}).get("consumers", []))


def _worker_connected(admin: BrokerAdmin, *namespaces: NamespaceName) -> Callable[[], bool]:
    """The worker's consumer is on every partition of each deletion topic and on each retry
    topic: every schema request its subscriptions made has been answered."""
    topics = [
        topic
        for ns in namespaces
        for topic in (
            *(TopicName(ns, f"{DELETION_TOPIC}-partition-{i}") for i in range(PARTITIONS)),
            TopicName.parse(ns.retry_topic),
        )
    ]
    return lambda: all(_consumers(admin, topic) >= 1 for topic in topics)


def _messages_in(admin: BrokerAdmin, topic: str) -> int:
    """Messages the broker took in on `topic`, over its partitions if it has any."""
    parsed = TopicName.parse(topic)
    stats = admin.get(f"{admin.topic_path(parsed)}/partitioned-stats", 404)
    if stats is None or stats.get("metadata", {}).get("partitions", 0) == 0:
        stats = admin.get(f"{admin.topic_path(parsed)}/stats", 404) or {}
    return int(stats.get("msgInCounter", 0))


def _reconsumed_then_archived(
    operator: Operator, admin: BrokerAdmin, leaks: Leaks, watched: NamespaceName,
    client_log: Path, others: tuple[NamespaceName, ...] = (),
) -> None:  # fmt: skip
    """`run`'s first start; `enqueue` of a ledger a topic references, which the worker
    reconsumes twice through the retry topic and then archives; `run` stopped; `archive
    drain`, which finds it still referenced and archives it again."""
    client = rig.client(operator.pulsar, client_log)
    busy = TopicName(watched, "busy")
    admin.put(admin.topic_path(busy))  # not partitioned, whatever the namespace's policy
    rig.produce(client, busy, 5)
    client.close()
    referenced = min(rig.ledgers_of(admin, busy))
    leaks.after("a topic of ours")
    run = operator.run([watched, *others])
    try:
        rig.wait_until(_worker_connected(admin, watched, *others), 120, "the worker's consumers")
        leaks.after("run, first start")
        operator.cli("enqueue", busy.full_name, str(referenced))
        leaks.after("enqueue, next to run")
        rig.wait_until(lambda: _messages_in(admin, watched.archive_topic) >= 1, 120,
                       "reconsumed through the retry topic, then archived")  # fmt: skip
        assert _messages_in(admin, watched.retry_topic) == 2
        leaks.after("run, reconsumed and archived")
    finally:
        run.stop()
    leaks.after("run, stopped")
    drained = operator.cli("archive", "drain", "--namespace", str(watched), "--yes")
    assert "1 archived again" in drained.stdout, drained.stdout  # still referenced
    assert referenced in rig.ledgers_of(admin, busy)
    leaks.after("archive drain")


def test_run_enqueue_and_archive_drain_leave_no_unreferenced_ledger(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, pulsar_zk: KazooClient, client_log: Path
) -> None:
    watched, other = _fresh(broker_admin, "watched"), _fresh(broker_admin, "other")
    by_enqueue = _fresh(broker_admin, "enqueued")
    leaks = Leaks(Census(pulsar_zk, broker_admin, (watched, other, by_enqueue)))
    assert leaks.known == {}
    operator = Operator(real_pulsar)
    _reconsumed_then_archived(operator, broker_admin, leaks, watched, client_log, (other,))
    operator.cli("enqueue", f"persistent://{by_enqueue}/t", "123456789")
    leaks.after("enqueue, first in its namespace")
    leaks.none()


@pytest.mark.timeout(1200)  # the audit: Spark on the whole cluster (11 min at load 25)
def test_audit_enqueue_leaves_no_unreferenced_ledger(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, pulsar_zk: KazooClient,
    java: JavaPrograms,
) -> None:  # fmt: skip
    """The audit's first enqueue into a namespace: an orphan made by BookKeeper's own client
    (recorded nowhere) for it to find, older than --min-age."""
    namespace = _fresh(broker_admin, "audited")
    (made,) = java.run("LeakMaker", real_pulsar.zookeeper_hosts,
                       f"{namespace}/persistent/gone", "-", 1, 65536)  # fmt: skip
    leaks = Leaks(Census(pulsar_zk, broker_admin, (namespace,)))
    assert set(leaks.known) == set(made["ledgers"])
    time.sleep(5)
    # Exit 3: data loss the audit found elsewhere in the cluster (another test's crashes).
    # Only this namespace's orphans: other tests' namespaces on the same broker are theirs.
    Operator(real_pulsar).cli("audit", "--spark-master", "local[2]", "--min-age", "5s",
                              "--enqueue", "--json", "--set", f"deletionNamespaces={namespace}",
                              timeout=1100, exits=(0, 3))  # fmt: skip
    deletion = f"persistent://{namespace}/{DELETION_TOPIC}"
    assert deletion in broker_admin.partitioned_topics(namespace)
    assert _messages_in(broker_admin, deletion) == 1  # the orphan, enqueued
    leaks.after("audit --enqueue")
    leaks.none()


def test_without_the_admin_api_on_partitioned_auto_created_topics_no_unreferenced_ledger(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, pulsar_zk: KazooClient, client_log: Path
) -> None:
    """No webServiceUrl, in a namespace whose topics are auto-created with 8 partitions (a
    common production policy): the deletion and archive topics are partitioned by the broker,
    and nothing but our clients registers their schema.

    The broker's own topic-policies topic (`__change_events`) is not judged: in such a
    namespace it is partitioned too, and the broker's own readers of its partitions leak
    schema ledgers the same way on any first producer (a plain one with no schema shows it)."""
    watched = _fresh(broker_admin, "watched")
    policy = {"allowAutoTopicCreation": True, "topicType": "partitioned",
              "defaultNumPartitions": PARTITIONS}  # fmt: skip
    broker_admin.post(f"/admin/v2/namespaces/{watched}/autoTopicCreation", policy)
    census = Census(pulsar_zk, broker_admin, (watched,), ignored_topics=(CHANGE_EVENTS,))
    leaks = Leaks(census)
    assert leaks.known == {}
    _reconsumed_then_archived(Operator(real_pulsar, with_admin=False), broker_admin, leaks,
                              watched, client_log)  # fmt: skip
    partitioned = broker_admin.partitioned_topics(watched)
    assert {watched.deletion_topic, watched.archive_topic} <= set(partitioned)
    leaks.none()
