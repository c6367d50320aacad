"""Old orphans are reclaimed, young ones are kept: BookKeeper's "zombie ledgers" on a real
broker. A broker that crashes between creating a ledger and recording it leaves a ledger
above everything its creator has recorded; on a topic that never rolls over again, or a
cursor never switched again, its creator never moves past it. Planted here with BookKeeper's
own Java client and Pulsar's custom metadata (LeakMaker), on live topics:

- a data ledger above its partition's newest ledger,
- a cursor ledger above its cursor's ledger (the other partition),
- a data ledger above the newest of a plain topic.

`ledger-janitor enqueue` names them, `ledger-janitor run` works them. Once older than the age
rule they are deleted (the broker's own ZooKeeper says so), and every topic still serves every
message; with the default age rule a just-made one is kept. The oracle is the cluster itself:
its ZooKeeper's `/ledgers`, and the broker's internalStats."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path

from kazoo.client import KazooClient

from deletion.domain.topics import NamespaceName, TopicName
from harness.java import JavaPrograms
from harness.process import run_cli, start_sidecar
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability import oracle

AGE_RULE = 5  # seconds: the planted ledgers are made older than this before the worker runs


class Log:
    """A sidecar's stderr, read on a thread of its own (a full pipe would stall it)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stderr is not None
        self._thread = threading.Thread(target=self._read, args=(process.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append(line)

    def stop(self, process: subprocess.Popen[str]) -> None:
        """SIGTERM, as an orchestrator would; the process must exit 0."""
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        self._thread.join(timeout=10)
        assert process.returncode == 0, "".join(self.lines[-20:])

    def events(self, name: str) -> list[dict[str, object]]:
        found = []
        for line in list(self.lines):
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("event") == name:
                    found.append(entry)
        return found


def _plant(java: JavaPrograms, pulsar_: RealPulsar, topic: TopicName, cursor: str) -> int:
    (made,) = java.run("LeakMaker", pulsar_.zookeeper_hosts, oracle.ml_name(topic), cursor, 1,
                       4096)  # fmt: skip
    (ledger,) = made["ledgers"]
    return int(ledger)


def _enqueue(pulsar_: RealPulsar, topic: TopicName, ledger: int, component: str) -> None:
    done = run_cli(
        "enqueue", topic.full_name, str(ledger), "--component", component,
        "--metadata-store", pulsar_.metadata_url, "--broker-url", pulsar_.service_url,
        "--set", "sendDelaySecondsOfTwoPhaseDeletion=1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _sidecar(pulsar_: RealPulsar, ns: NamespaceName, min_age: int | None) -> subprocess.Popen[str]:
    return start_sidecar(
        pulsar_.metadata_url, pulsar_.service_url,
        webServiceUrl=pulsar_.web_url,
        deletionNamespaces=str(ns),
        sendDelaySecondsOfTwoPhaseDeletion=1,
        reconsumeLaterSecondsOfTwoPhaseDeletion=1,
        minLedgerAgeSecondsOfTwoPhaseDeletion=min_age,
    )  # fmt: skip


def test_old_zombies_above_their_creators_newest_are_deleted_and_young_ones_kept(
    java: JavaPrograms, real_pulsar: RealPulsar, broker_admin: BrokerAdmin,
    real_namespace: NamespaceName, pulsar_zk: KazooClient, client_log: Path,
) -> None:  # fmt: skip
    ns = real_namespace
    orders, audit = TopicName(ns, "orders"), TopicName(ns, "audit")
    broker_admin.create_partitioned(orders, 2)
    client = rig.client(real_pulsar, client_log)
    partitions = [TopicName(ns, f"orders-partition-{i}") for i in range(2)]
    sent = {topic: rig.produce(client, topic, 5) for topic in (*partitions, audit)}
    referenced = {topic: rig.ledgers_of(broker_admin, topic) for topic in sent}
    # Above everything each creator has recorded, and recorded nowhere.
    zombies = {
        _plant(java, real_pulsar, partitions[0], "-"): (partitions[0], "MANAGED_LEDGER"),
        _plant(java, real_pulsar, partitions[1], "keep"): (partitions[1], "MANAGED_CURSOR"),
        _plant(java, real_pulsar, audit, "-"): (audit, "MANAGED_LEDGER"),
    }
    for topic in sent:
        assert max(zombies) > max(referenced[topic])
    for ledger, (topic, component) in zombies.items():
        _enqueue(real_pulsar, topic, ledger, component)
    time.sleep(AGE_RULE + 1)  # older than the age rule before any snapshot is read

    sidecar = _sidecar(real_pulsar, ns, AGE_RULE)
    log = Log(sidecar)
    try:
        rig.wait_until(
            lambda: not set(zombies) & rig.bookkeeper_ledgers(pulsar_zk), 120,
            f"the old zombies {sorted(zombies)} gone from the cluster's /ledgers",
        )  # fmt: skip
    finally:
        log.stop(sidecar)
        print("".join(log.lines[-20:]))
    deleted = {entry["ledger_id"] for entry in log.events("deleted")}
    assert deleted == set(zombies)
    alive = rig.bookkeeper_ledgers(pulsar_zk)
    for topic, ledgers in referenced.items():
        # What the broker references now (it may have trimmed nothing: 'keep' holds all).
        assert rig.ledgers_of(broker_admin, topic) <= alive
        assert ledgers <= alive
    for topic, payloads in sent.items():
        consumer = client.subscribe(topic.full_name, "keep")
        assert [m.data() for m in rig.receive_all(consumer, len(payloads))] == payloads
        consumer.close()

    # A zombie just made, with the product's default age rule: it may be being created.
    young = _plant(java, real_pulsar, audit, "-")
    _enqueue(real_pulsar, audit, young, "MANAGED_LEDGER")
    sidecar = _sidecar(real_pulsar, ns, None)
    log = Log(sidecar)
    try:
        rig.wait_until(
            lambda: any(e.get("ledger_id") == young for e in log.events("reconsumed")), 120,
            f"the worker's ruling on the young ledger {young}",
        )  # fmt: skip
    finally:
        log.stop(sidecar)
    (ruling,) = [e for e in log.events("reconsumed") if e.get("ledger_id") == young]
    assert "too young" in str(ruling["reason"]), ruling
    assert young in rig.bookkeeper_ledgers(pulsar_zk)
    client.close()
