"""A busy cluster while ledger-janitor works on it. Producers and consumers run on several
topics, so data ledgers roll over every 10 entries and cursor ledgers every 5 acks, and a
topic's schema gains versions; meanwhile `audit --enqueue` runs with the smallest grace the
product allows (`--min-age 0s`) and the worker with no age rule at all, so only the creators'
rule stands between them and a ledger being created. Then a cold restart, and every message
not yet acknowledged is delivered.

A watcher reads the broker's own metadata in ZooKeeper every few milliseconds and settles the
question of issue 24 on the real broker: does Pulsar create a cursor, data or schema ledger
and record it only later, while the topic already records a newer ledger of another creator?
That is when the rule "a snapshot read after the due time vouches for any id at or below the
topic's newest referenced ledger" would have deleted it."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulsar
from kazoo.client import KazooClient

from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator
from harness.janitor import Recorder
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability import oracle

TOPICS = 2
EVOLVING = "evolving"


@dataclass
class Watcher:
    """What the broker's metadata showed: when each ledger of the namespace was first seen
    in BookKeeper and when first recorded, by component; and each time a ledger existed,
    unrecorded, below its topic's newest recorded ledger."""

    zk: KazooClient
    topics: list[TopicName]
    first_seen: dict[int, float] = field(default_factory=dict)
    recorded: dict[int, tuple[float, str]] = field(default_factory=dict)
    below_newest: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    polls: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._poll()
            except Exception:
                continue
            self.polls += 1

    def _poll(self) -> None:
        now = time.time()
        ours: dict[int, str] = {}  # ledger -> the topic whose metadata names it (ground truth)
        newest: dict[str, int] = {}
        for topic in self.topics:
            path = oracle.ml_path(topic)
            data, _ = self.zk.get(path)
            info = ManagedLedgerInfo()
            info.ParseFromString(data)
            refs = {(ledger.ledgerId, "data") for ledger in info.ledgerInfo}
            for cursor in self.zk.get_children(path):
                cursor_data, _ = self.zk.get(f"{path}/{cursor}")
                parsed = ManagedCursorInfo()
                parsed.ParseFromString(cursor_data)
                if parsed.cursorsLedgerId >= 0:
                    refs.add((parsed.cursorsLedgerId, "cursor"))
            schema = self.zk.exists(oracle.schema_path(topic))
            if schema is not None:
                locator_data, _ = self.zk.get(oracle.schema_path(topic))
                locator = SchemaLocator()
                locator.ParseFromString(locator_data)
                refs |= {(entry.position.ledgerId, "schema") for entry in locator.index}
            for ledger, kind in refs:
                self.recorded.setdefault(ledger, (now, kind))
            if refs:
                newest[str(topic)] = max(ledger for ledger, _ in refs)
            ours.update({ledger: str(topic) for ledger, _ in refs})
        alive = rig.bookkeeper_ledgers(self.zk)
        for ledger in alive:
            self.first_seen.setdefault(ledger, now)
        # A ledger that exists, is recorded nowhere yet, and is below some topic's newest:
        # attributed below, once we know whose it became.
        for ledger in alive - set(ours):
            for name, top in newest.items():
                if ledger < top:
                    self.below_newest[name].add(ledger)

    def windows(self) -> dict[str, list[float]]:
        """Per component, seconds from first seen in BookKeeper to first seen recorded."""
        found: dict[str, list[float]] = defaultdict(list)
        for ledger, (at, kind) in self.recorded.items():
            if ledger in self.first_seen and at > self.first_seen[ledger]:
                found[kind].append(at - self.first_seen[ledger])
        return found

    def vouched_wrongly(self) -> Counter[str]:
        """Ledgers the old rule would have let go: seen unrecorded below their own topic's
        newest recorded ledger, and recorded afterwards, by component."""
        counts: Counter[str] = Counter()
        for ledger, (_, kind) in self.recorded.items():
            if any(ledger in seen for seen in self.below_newest.values()):
                counts[kind] += 1
        return counts


class Load:
    """A producer and an acknowledging consumer per topic, and a schema gaining versions."""

    def __init__(self, client: pulsar.Client, topics: list[TopicName], evolving: TopicName):
        self.client, self.topics, self.evolving = client, topics, evolving
        self.sent: dict[TopicName, list[bytes]] = defaultdict(list)
        self.acked: dict[TopicName, list[bytes]] = defaultdict(list)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._produce, args=(t,)) for t in topics]
        self.threads += [threading.Thread(target=self._consume, args=(t,)) for t in topics]
        self.threads.append(threading.Thread(target=self._evolve))
        for topic in topics:
            client.subscribe(topic.full_name, "s", consumer_type=pulsar.ConsumerType.Shared).close()

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def _produce(self, topic: TopicName) -> None:
        producer = self.client.create_producer(topic.full_name, batching_enabled=False)
        index = 0
        while not self.stop.is_set():
            payload = f"{topic.local_name}-{index}".encode()
            producer.send(payload)
            self.sent[topic].append(payload)
            index += 1
            time.sleep(0.01)
        producer.close()

    def _consume(self, topic: TopicName) -> None:
        consumer = self.client.subscribe(
            topic.full_name, "s", consumer_type=pulsar.ConsumerType.Shared
        )
        while not self.stop.is_set():
            try:
                message = consumer.receive(200)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(message)
            self.acked[topic].append(message.data())
        consumer.close()

    def _evolve(self) -> None:
        version = 0
        while not self.stop.is_set():
            fields: dict[str, Any] = {f"f{i}": pulsar.schema.String() for i in range(version + 1)}
            record = type("Evolving", (pulsar.schema.Record,), fields)
            producer = self.client.create_producer(
                self.evolving.full_name, schema=pulsar.schema.AvroSchema(record)
            )
            producer.send(record(**{name: "x" for name in fields}))
            producer.close()
            version += 1
            self.stop.wait(1.0)


def test_a_busy_cluster_loses_nothing_while_audited_and_cleaned_with_no_grace(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    pulsar_zk: KazooClient, client_log: Path,
) -> None:  # fmt: skip
    standalone = real_pulsar.ours()
    ns = real_namespace
    broker_admin.put(f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy", "ALWAYS_COMPATIBLE")
    topics = [TopicName(ns, f"busy-{i}") for i in range(TOPICS)]
    evolving = TopicName(ns, EVOLVING)
    client = rig.client(real_pulsar, client_log)
    rig.produce(client, evolving, 1)  # its managed ledger exists before the watcher reads it
    load = Load(client, topics, evolving)
    watcher = Watcher(pulsar_zk, [*topics, evolving])
    watching = threading.Thread(target=watcher.run)
    sidecar = rig.sidecar(
        real_pulsar, client_log, deletion_namespaces=(str(ns),),
        min_ledger_age_seconds_of_two_phase_deletion=0,
        max_reconsume_times_of_two_phase_deletion=3,
    )  # fmt: skip
    recorder = Recorder()
    worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.5)
    load.start()
    watching.start()
    worker.start()
    try:
        for _ in range(2):
            figures = rig.audit(
                "--metadata-store", real_pulsar.metadata_url,
                "--broker-url", real_pulsar.service_url, "--min-age", "0s", "--enqueue",
                "--set", "sendDelaySecondsOfTwoPhaseDeletion=1",
                "--set", f"deletionNamespaces={ns}",
            )  # fmt: skip
            print("audit:", {k: figures[k] for k in ("ledgers", "orphans", "enqueued")})
        time.sleep(5)
    finally:
        load.finish()
        watcher.stop.set()
        watching.join(timeout=30)
        worker.stop()
        sidecar.close()

    deleted = {
        r.info.ledger_id for r in recorder.results if r.info and r.outcome is Outcome.DELETED
    }
    kept = Counter(
        r.reason.split(" of ")[0]
        for r in recorder.results
        if r.info and r.outcome is Outcome.RECONSUMED and "may still be creating" in r.reason
    )
    referenced = set().union(*(rig.ledgers_of(broker_admin, t) for t in [*topics, evolving]))
    assert not deleted & referenced, sorted(deleted & referenced)
    assert not deleted & set(watcher.recorded), sorted(deleted & set(watcher.recorded))
    windows = watcher.windows()
    print(f"watcher: {watcher.polls} polls; creation-to-record windows (s): "
          f"{ {k: (len(v), round(max(v), 3)) for k, v in windows.items()} }")  # fmt: skip
    print(
        "the old rule would have vouched for, then seen recorded:", dict(watcher.vouched_wrongly())
    )
    print(f"worker: {len(deleted)} deleted, kept by the creators' rule: {sum(kept.values())}")
    assert {"data", "cursor"} <= set(windows)  # Pulsar creates, then records

    standalone.restart()
    client.close()
    client = rig.client(real_pulsar, client_log)
    try:
        for topic in topics:
            left = Counter(load.sent[topic]) - Counter(load.acked[topic])
            consumer = client.subscribe(
                topic.full_name, "s", consumer_type=pulsar.ConsumerType.Shared
            )
            back = Counter(m.data() for m in rig.receive_all(consumer, sum(left.values()), 60))
            consumer.close()
            assert back == left, topic
        rig.produce(client, evolving, 1)  # the schema's versions recovered: it still serves
    finally:
        client.close()
