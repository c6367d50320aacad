"""What the real-broker tests share: a sidecar on the real cluster, real topics with real
ledgers, and the broker's own view of them (internalStats, `/ledgers` in its ZooKeeper)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import duckdb
import pulsar
from kazoo.client import KazooClient

from config import ServiceConfiguration
from deletion.domain.topics import TopicName
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from harness import process
from harness.janitor import Recorder
from harness.pulsar_admin import BrokerAdmin
from ledger_janitor.sidecar.wiring import Sidecar, open_sidecar
from tests.real_pulsar.conftest import RealPulsar
from tests.reliability.raw_ledgers import ZooKeeperLedgers


def config(pulsar_: RealPulsar, **overrides: Any) -> ServiceConfiguration:
    settings: dict[str, Any] = {
        "broker_service_url": pulsar_.service_url,
        "web_service_url": pulsar_.web_url,
        "metadata_store_url": pulsar_.metadata_url,
        "send_delay_seconds_of_two_phase_deletion": 2,
        "clock_skew_allowance_seconds_of_two_phase_deletion": 0,  # one machine, one clock
        # No ZooKeeper outage to settle from, unless a test makes one (and sets it).
        "metadata_store_session_timeout_millis": 0,
        "reconsume_later_seconds_of_two_phase_deletion": 1,
        "operation_timeout_seconds": 30,
        "metrics_port": 0,
    }
    settings.update(overrides)
    return ServiceConfiguration().with_overrides(**settings)


def sidecar(pulsar_: RealPulsar, log: Path, **overrides: Any) -> Sidecar:
    return open_sidecar(config(pulsar_, **overrides), client_log=log)


def client(pulsar_: RealPulsar, log: Path) -> pulsar.Client:
    logger = pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log))
    return pulsar.Client(pulsar_.service_url, logger=logger, operation_timeout_seconds=30)


def produce(
    client_: pulsar.Client,
    topic: TopicName,
    count: int,
    prefix: str = "m",
    value: Callable[[int], Any] | None = None,
    **options: Any,
) -> list[Any]:
    """`count` messages, one entry each (no batching): with 10 entries a ledger, a roll-over
    every 10. A durable subscription `keep` is made first, so that the broker neither
    trims them nor deletes the topic as inactive."""
    client_.subscribe(
        topic.full_name, "keep", initial_position=pulsar.InitialPosition.Earliest
    ).close()
    producer = client_.create_producer(topic.full_name, batching_enabled=False, **options)
    sent = [
        value(index) if value is not None else f"{prefix}-{index}".encode()
        for index in range(count)
    ]
    for payload in sent:
        producer.send(payload)
    producer.close()
    return sent


def _order(fields: dict[str, Any]) -> Any:
    """An Avro record class named Order: both versions share the name, as evolution needs."""
    return type("Order", (pulsar.schema.Record,), fields)


OrderV1 = _order({"item": pulsar.schema.String()})
OrderV2 = _order({"item": pulsar.schema.String(), "qty": pulsar.schema.Integer()})


def compacted_view(client_: pulsar.Client, topic: TopicName) -> dict[str, bytes]:
    """The topic's compacted view, as a reader with `readCompacted` sees it: per key, the
    latest value.

    A batch the compactor kept with some of its messages superseded holds those as
    placeholders (RawBatchConverter: `SingleMessageMetadata.compacted_out`, no key, no
    payload). Java's consumer skips them; the C++ client under pulsar-client 3.13 does not
    read the flag and hands them out as messages without key or payload (seen on the cluster:
    tests/cluster/test_interrupted_compaction.py). Those are left out here; the tests send no
    such message of their own."""
    reader = client_.create_reader(
        topic.full_name, pulsar.MessageId.earliest, is_read_compacted=True
    )
    latest = {}
    try:
        while reader.has_message_available():
            message = reader.read_next(30_000)
            if not message.partition_key() and not message.data():
                continue  # a compacted-out placeholder
            latest[message.partition_key()] = message.data()
    finally:
        reader.close()
    return latest


def compact(admin: BrokerAdmin, topic: TopicName) -> int:
    """A compaction run to its end: the compacted ledger the broker then reads."""
    path = admin.topic_path(topic)
    before = admin.internal_stats(topic).get("compactedLedger", {}).get("ledgerId", -1)
    admin.put(f"{path}/compaction")

    def done() -> Any:
        status = admin.get(f"{path}/compaction")["status"]
        assert status != "ERROR", admin.get(f"{path}/compaction")
        now = admin.internal_stats(topic).get("compactedLedger", {}).get("ledgerId", -1)
        return status == "SUCCESS" and now not in (-1, before)

    wait_until(done, 60, f"the compaction of {topic}")
    return int(admin.internal_stats(topic)["compactedLedger"]["ledgerId"])


def ledgers_of(admin: BrokerAdmin, topic: TopicName) -> set[int]:
    """Every ledger the broker says the topic references: data, cursors, schema, compacted."""
    stats = admin.internal_stats(topic)
    found = {ledger["ledgerId"] for ledger in stats["ledgers"]}
    found |= {cursor["cursorLedger"] for cursor in stats["cursors"].values()}
    found |= {ledger["ledgerId"] for ledger in stats.get("schemaLedgers", [])}
    found.add(stats.get("compactedLedger", {}).get("ledgerId", -1))
    return {ledger for ledger in found if ledger >= 0}


def bookkeeper_ledgers(zk: KazooClient) -> set[int]:
    """The ledgers whose metadata exists in the cluster's ZooKeeper, read raw."""
    return ZooKeeperLedgers(zk).alive()


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """harness.process.wait_until, polling a broker's HTTP API or store at 5 a second."""
    process.wait_until(condition, timeout, what, poll=0.2)


def receive_all(consumer: Any, count: int, timeout: float = 30) -> list[Any]:
    return [received for received, _ in receive_timed(consumer, count, timeout)]


def receive_timed(consumer: Any, count: int, timeout: float = 30) -> list[tuple[Any, float]]:
    """`count` messages, each with the wall-clock time it was handed over."""
    received: list[tuple[Any, float]] = []
    deadline = time.monotonic() + timeout
    while len(received) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"received {len(received)} of {count} within {timeout:.0f}s")
        try:
            message = consumer.receive(int(left * 1000))
        except pulsar.Timeout:
            continue
        received.append((message, time.time()))
    return received


def drained(consumer: Any, messages: Iterable[Any]) -> None:
    for received in messages:
        consumer.acknowledge(received)


def audit(*args: str, timeout: float = 600) -> dict[str, Any]:
    """`ledger-janitor audit ... --json` as an operator runs it (Spark local[2] on loopback):
    its figures, the last line it prints."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [sys.executable, "-m", "ledger_janitor", "audit", "--spark-master", "local[2]",
               "--json", *args]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"audit exited {done.returncode}:\n{done.stderr[-3000:]}"
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def rows(query: str) -> list[tuple[Any, ...]]:
    """The rows of a DuckDB query (over the audit's Parquet reports)."""
    relation = duckdb.sql(query)
    assert relation is not None, query
    return relation.fetchall()


def ledger_znode(ledger_id: int) -> str:
    """Where BookKeeper's hierarchical layout keeps a ledger's metadata (below
    Integer.MAX_VALUE: `%010d` split 2-4-4), worked out here."""
    digits = f"{ledger_id:010d}"
    return f"/ledgers/{digits[:2]}/{digits[2:6]}/L{digits[6:]}"


def ledger_metadata(zk: KazooClient, ledger_id: int) -> dict[str, str]:
    """A ledger's custom metadata, read raw: the hierarchical path worked out here, the v3
    format (`BookieMetadataFormatVersion\t3\n`, a varint length, LedgerMetadataFormat)
    parsed with the generated protobuf class."""
    data, _ = zk.get(ledger_znode(ledger_id))
    header = b"BookieMetadataFormatVersion\t3\n"
    assert data.startswith(header), data[:40]
    length, shift, offset = 0, 0, len(header)
    while True:  # the varint32 length
        byte = data[offset]
        length |= (byte & 0x7F) << shift
        offset, shift = offset + 1, shift + 7
        if byte < 0x80:
            break
    parsed = LedgerMetadataFormat()
    parsed.ParseFromString(data[offset : offset + length])
    # Values are bytes: a compacted ledger's pulsar/compactedTo is a serialized message id.
    return {entry.key: entry.value.decode(errors="replace") for entry in parsed.customMetadata}


def schema_ledgers(zk: KazooClient, schema_id: str) -> set[int]:
    """Every ledger in BookKeeper whose metadata says it holds a version of `schema_id`."""
    return {
        ledger
        for ledger in bookkeeper_ledgers(zk)
        if ledger_metadata(zk, ledger).get("pulsar/schemaId") == schema_id
    }


def run_worker(
    sidecar: Sidecar, until: Callable[[Recorder], bool], timeout: float = 60
) -> Recorder:
    """The sidecar's worker, started, until `until(recorder)` holds; stopped either way."""
    recorder = Recorder()
    worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.5)
    worker.start()
    try:
        recorder.wait_for(lambda _: until(recorder), timeout=timeout)
    finally:
        worker.stop()
    return recorder
