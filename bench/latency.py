"""End-to-end latency: phase one's acknowledged send to the ledger's deletion, against the
configured delay (sendDelaySecondsOfTwoPhaseDeletion), on a real ZooKeeper and pulsar-lite.

    python -m bench.latency [--json] [--quick] [--messages N] [--delay SECONDS] [--rate R]

A worker runs throughout; N ledgers are released one at a time at R a second, each through
`PhaseOne.enqueue_then_commit`, timed from just before the send. pulsar-lite ignores
delivery delays, so every message arrives at once and the worker's early-delivery gate
holds it until publish time + delay:
what is measured is the gate's precision plus the handling. Latency = deletion time - time
before the send; the overhead is latency - delay, and a negative overhead (beyond the
millisecond rounding of the publish time) would be an early deletion. In the same run,
the raw broker round trip (send -> receive, no delay) is measured for comparison.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

import pulsar

from bench._common import (
    Services,
    console_for,
    finish,
    parser,
    pending,
    percentile,
    quiet,
    render,
    seed,
    services,
)
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain import message
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Recorder
from ledger_janitor.sidecar.wiring import open_sidecar

# The producer stamps the publish time in whole milliseconds, after our clock read.
SKEW_SECONDS = 0.002


def measure(svc: Services, messages: int, delay: float, rate: float) -> dict[str, Any]:
    config = svc.config("/bench-latency", send_delay_seconds_of_two_phase_deletion=int(delay))
    sidecar = open_sidecar(config, client_log=svc.root / "client.log")
    try:
        topic = TopicName(NamespaceName("latency", "ns"), "t")
        client = sidecar.metadata.client  # type: ignore[attr-defined]
        (seeded,) = seed(client, sidecar.metadata, [topic], messages)
        writer = ManagedLedgerWriter(sidecar.metadata)
        sidecar.registry.register(topic.namespace)
        recorder = Recorder()
        worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.2)
        worker.start()
        sent: dict[int, float] = {}
        started = time.time()
        for n, ledger_id in enumerate(seeded.released):
            time.sleep(max(0.0, started + n / rate - time.time()))  # pacing, not waiting
            sent[ledger_id] = time.time()
            sidecar.phase_one.enqueue_then_commit(
                [pending(topic, ledger_id)],
                partial(writer.remove_ledgers, topic, [ledger_id]),
            )
        recorder.wait_for(lambda results: len(results) >= messages, timeout=delay + 600)
        worker.stop()
        deleted = {
            result.info.ledger_id: at
            for result, at in zip(recorder.results, recorder.times, strict=True)
            if result.info is not None and result.outcome is Outcome.DELETED
        }
        latencies = [deleted[i] - sent[i] for i in seeded.released if i in deleted]
        return {
            "deleted": len(deleted),
            "latencies": latencies,
            "outcomes": worker.stats.summary(),
        }
    finally:
        sidecar.close()


def raw_round_trip(svc: Services, messages: int, rate: float) -> list[float]:
    """Send -> receive through the broker with no delay, paced the same way."""
    namespace = NamespaceName("rawlatency", "ns")
    client = pulsar.Client(
        svc.broker.service_url,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(svc.root / "raw-client.log")),
    )
    try:
        consumer = client.subscribe(
            namespace.deletion_topic, "raw", consumer_type=pulsar.ConsumerType.Shared
        )
        producer = client.create_producer(namespace.deletion_topic, batching_enabled=False)
        payload = message.encode(pending(TopicName(namespace, "t"), 1))
        trips = []
        for _ in range(messages):
            before = time.time()
            producer.send(payload)
            consumer.acknowledge(consumer.receive(10_000))
            trips.append(time.time() - before)
            time.sleep(max(0.0, 1 / rate - trips[-1]))  # pacing, not waiting
        return trips
    finally:
        client.close()


def summary(values: list[float]) -> dict[str, float]:
    return {
        "min": min(values),
        "p50": percentile(values, 0.50),
        "p95": percentile(values, 0.95),
        "p99": percentile(values, 0.99),
        "max": max(values),
    }


def run(messages: int, delay: float, rate: float, workdir: Path | None) -> dict[str, Any]:
    with services(workdir) as svc:
        measured = measure(svc, messages, delay, rate)
        raw = raw_round_trip(svc, min(messages, 200), rate)
    latencies = measured["latencies"]
    overhead = [value - delay for value in latencies]
    return {
        "bench": "latency",
        "messages": messages,
        "deleted": measured["deleted"],
        "delay_seconds": delay,
        "rate_per_second": rate,
        "latency_seconds": summary(latencies),
        "overhead_seconds": summary(overhead),
        "early": sum(value < -SKEW_SECONDS for value in overhead),
        "raw_broker_round_trip_seconds": summary(raw),
        "outcomes": measured["outcomes"],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser("latency", __doc__)
    args.add_argument("--messages", type=int, help="ledgers released (default 500, quick 40)")
    args.add_argument("--delay", type=int, help="sendDelaySeconds (default 5, quick 1)")
    args.add_argument("--rate", type=float, default=50.0, help="releases a second")
    options = args.parse_args(argv)
    quiet()
    messages = options.messages or (40 if options.quick else 500)
    delay = options.delay if options.delay is not None else (1 if options.quick else 5)
    result = run(messages, delay, options.rate, options.workdir)
    console = console_for(options.json)
    rows = [
        (name, *(result[key][q] for q in ("min", "p50", "p95", "p99", "max")))
        for name, key in (
            ("enqueue -> deleted", "latency_seconds"),
            ("  minus the configured delay", "overhead_seconds"),
            ("raw broker send -> receive", "raw_broker_round_trip_seconds"),
        )
    ]
    render(
        f"End-to-end latency (seconds): {result['deleted']:,} of {messages:,} deleted, delay "
        f"{delay}s, {options.rate:g} releases/s",
        ["what", "min", "p50", "p95", "p99", "max"],
        rows,
        console,
    )
    console.print(f"deleted before their delay: {result['early']}; outcomes {result['outcomes']}")
    return finish(result, options.json)


if __name__ == "__main__":
    main()
