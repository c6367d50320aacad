"""Real leaks are cleaned, and the bookie's space comes back.

Leaks made for real: the broker killed with SIGKILL in the middle of work (topics being
deleted while a producer rolls ledgers over), and ledgers made through BookKeeper's own Java
client with the custom metadata Pulsar writes, filled and closed, and recorded nowhere (what a
crash between creating a ledger and recording it leaves): for a live topic, whose managed
ledger and cursor then move on, and for a deleted one. `audit --enqueue`, then the worker:
every leaked ledger is gone from the bookie's own listing (its HTTP API), its entry logs are
collected (the bytes on the bookie's disk measured before and after), every topic still serves
every message, and no ledger the broker references was deleted."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pulsar
from kazoo.client import KazooClient

from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Recorder
from harness.java import JavaPrograms
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability import oracle

LEAK_BYTES = 1_500_000  # a ledger's worth of 64 KiB entries


def _entry_log_bytes(ledger_dir: Path) -> int:
    """What the bookie keeps of entries on disk: its entry logs, `current/<hex>.log` (not
    the journal, nor the RocksDB index's own logs under `current/ledgers` and `locations`)."""
    return sum(path.stat().st_size for path in (ledger_dir / "current").glob("*.log"))


def _bookie_ledgers(bookie: str) -> set[int]:
    listed = httpx.get(f"{bookie}/api/v1/ledger/list", timeout=30).json()
    return {int(ledger) for ledger in listed}


def _kill_in_the_middle_of_work(
    real_pulsar: RealPulsar, admin: BrokerAdmin, ns: NamespaceName, log: Path
) -> None:
    """Topics deleted while another one rolls ledgers over; SIGKILL part-way; start again."""
    standalone = real_pulsar.ours()
    client = rig.client(real_pulsar, log)
    doomed = [TopicName(ns, f"doomed-{i}") for i in range(4)]
    for topic in doomed:
        rig.produce(client, topic, 25)
    busy = TopicName(ns, "busy")
    client.subscribe(busy.full_name, "keep").close()
    stop = threading.Event()

    def produce() -> None:
        producer = client.create_producer(busy.full_name, batching_enabled=False)
        index = 0
        while not stop.is_set():
            try:
                producer.send(f"b-{index}".encode())
            except pulsar.PulsarException:
                return
            index += 1

    def delete() -> None:
        for topic in doomed:
            try:
                admin.delete(f"{admin.topic_path(topic)}?force=true")
            except (AssertionError, httpx.HTTPError):
                return

    workers = [threading.Thread(target=produce), threading.Thread(target=delete)]
    for thread in workers:
        thread.start()
    time.sleep(1.0)
    standalone.kill()
    stop.set()
    for thread in workers:
        thread.join(timeout=60)
    client.close()
    standalone.start()


def test_real_leaks_are_cleaned_and_the_bookie_gets_its_space_back(
    java: JavaPrograms, real_pulsar: RealPulsar, broker_admin: BrokerAdmin,
    real_namespace: NamespaceName, pulsar_zk: KazooClient, client_log: Path, tmp_path: Path,
) -> None:  # fmt: skip
    standalone = real_pulsar.ours()
    ns = real_namespace
    _kill_in_the_middle_of_work(real_pulsar, broker_admin, ns, client_log)

    client = rig.client(real_pulsar, client_log)
    live, gone = TopicName(ns, "live"), TopicName(ns, "gone")
    sent = rig.produce(client, live, 25)
    rig.produce(client, gone, 5)
    broker_admin.delete(f"{broker_admin.topic_path(gone)}?force=true")
    zk, ledger_dir = real_pulsar.zookeeper_hosts, standalone.ledger_dir
    leaked = set()
    for name, cursor, count in ((oracle.ml_name(live), "-", 3), (oracle.ml_name(live), "keep", 2),
                                (oracle.ml_name(gone), "-", 3)):  # fmt: skip
        (made,) = java.run("LeakMaker", zk, name, cursor, count, LEAK_BYTES)
        leaked |= set(made["ledgers"])
    # The live topic's creators move past them: its next roll-over, its cursor's next switch.
    sent += rig.produce(client, live, 12, prefix="more")
    consumer = client.subscribe(live.full_name, "keep", consumer_type=pulsar.ConsumerType.Shared)
    received = rig.receive_all(consumer, 6)
    for message in received:
        consumer.acknowledge(message)
    time.sleep(1)
    consumer.close()
    unacked = sent[6:]

    time.sleep(3)  # flushed from the bookie's write cache to its entry logs (every second)
    before = _entry_log_bytes(ledger_dir)
    listed_before = _bookie_ledgers(standalone.bookie_http_url)
    assert leaked <= listed_before
    referenced = rig.ledgers_of(broker_admin, live)
    time.sleep(6)  # older than the audit's and the worker's grace below

    figures = rig.audit(
        "--metadata-store", real_pulsar.metadata_url, "--broker-url", real_pulsar.service_url,
        "--min-age", "5s", "--enqueue", "--set", "sendDelaySecondsOfTwoPhaseDeletion=1",
        "--set", f"deletionNamespaces={ns}",
    )  # fmt: skip
    print("audit:", figures)
    sidecar = rig.sidecar(
        real_pulsar, client_log, deletion_namespaces=(str(ns),),
        min_ledger_age_seconds_of_two_phase_deletion=5,
        bookie_http_service_url=standalone.bookie_http_url,
    )  # fmt: skip
    recorder = Recorder()
    worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.5)
    worker.start()
    try:
        rig.wait_until(
            lambda: not leaked & _bookie_ledgers(standalone.bookie_http_url), 120,
            "every leaked ledger gone from the bookie's own listing",
        )  # fmt: skip
    finally:
        worker.stop()
        sidecar.close()
    deleted = {
        r.info.ledger_id for r in recorder.results if r.info and r.outcome is Outcome.DELETED
    }
    assert leaked <= deleted
    # Nothing the broker referenced was deleted by us, and all it references now is there.
    # A ledger referenced when read may be gone since: the broker trims consumed ledgers
    # itself (its own delete, not ours: not among `deleted`).
    assert not deleted & referenced
    now_referenced = rig.ledgers_of(broker_admin, live)
    assert not deleted & now_referenced
    assert now_referenced <= _bookie_ledgers(standalone.bookie_http_url)

    httpx.put(f"{standalone.bookie_http_url}/api/v1/bookie/gc", timeout=60)
    leaked_bytes = len(leaked) * LEAK_BYTES

    def reclaimed() -> int:
        return before - _entry_log_bytes(ledger_dir)

    rig.wait_until(lambda: reclaimed() >= leaked_bytes // 2, 120, "the bookie's GC")
    print(f"bookie entry logs: {before:,} bytes before, {before - reclaimed():,} after: "
          f"{reclaimed():,} reclaimed of {leaked_bytes:,} leaked")  # fmt: skip

    consumer = client.subscribe(live.full_name, "keep", consumer_type=pulsar.ConsumerType.Shared)
    back = [m.data() for m in rig.receive_all(consumer, len(unacked), timeout=60)]
    consumer.close()
    client.close()
    assert sorted(back) == sorted(unacked)
