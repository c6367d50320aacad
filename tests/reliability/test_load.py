"""Load: many pending deletions over many namespaces, two `ledger-janitor run` processes.

Default: 5,000 deletions over 20 namespaces; LEDGER_JANITOR_LONG_TESTS=1: 100,000 over 100.
All are handled, none is lost (each ledger deleted exactly once, nothing else deleted, the
subscriptions' backlog empty), memory stays bounded (a peak limit, and no growth over the
second half of the run), and no producer or consumer is left open, as both the processes and
the broker itself count them. See worker_main.py for how two processes share pulsar-lite.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench._common import enqueue_then_commit, seed, topics_over
from config import ServiceConfiguration
from deletion.domain.namespaces import NamespaceRegistry
from deletion.domain.topics import SUBSCRIPTION
from harness.janitor import zookeeper_backend
from harness.process import wait_until
from harness.pulsar_lite import skip_consumer_ids
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.sidecar.wiring import open_sidecar
from tests.reliability.raw_ledgers import ZooKeeperLedgers
from tests.reliability.support import (
    LONG,
    broker_metrics,
    metric_sum,
    scaled,
    start_worker,
    wait_ready,
)

pytestmark = pytest.mark.timeout(scaled(180, 3600))

NAMESPACES = scaled(20, 100)
DELETIONS = scaled(5_000, 100_000)
TOPICS_PER_NAMESPACE = 5
# A worker's memory follows its receiver queues (namespaces x partitions x 100 messages), not
# the backlog, and stays flat while it works. Measured peaks: 84 MB (5k deletions over 20
# namespaces), 106 MB (25k over 20), 171 MB (100k over 100).
PEAK_RSS_LIMIT_KB = 300 * 1024
MAX_PRODUCERS = 64  # the pool's bound, in topics
PARTITIONS = 4  # of every topic pulsar-lite creates here (EmbeddedBroker(partitions=4))


def test_two_worker_processes_handle_every_pending_deletion_once(
    zookeeper: ZooKeeperServer, private_broker: EmbeddedBroker, chroot: str, tmp_path: Path
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    store = backend.metadata
    topics = topics_over(NAMESPACES, NAMESPACES * TOPICS_PER_NAMESPACE, tenant="load")
    seeded = seed(
        store.client,  # type: ignore[attr-defined]
        store,
        topics,
        released_per_topic=DELETIONS // len(topics),
    )
    released = {i for entry in seeded for i in entry.released}
    referenced = set().union(*(entry.referenced() for entry in seeded))
    registry = NamespaceRegistry(store)
    for namespace in {topic.namespace for topic in topics}:
        registry.register(namespace)  # so both workers subscribe before the burst

    settings: dict[str, object] = {
        "sendDelaySecondsOfTwoPhaseDeletion": 0,
        "reconsumeLaterSecondsOfTwoPhaseDeletion": 1,
        "ledgerDeletionWorkerThreadsOfTwoPhaseDeletion": 4,
    }
    url, broker_url = backend.metadata_url, private_broker.service_url
    first = start_worker("worker-1", tmp_path, url, broker_url, settings=settings)
    # Consumer ids disjoint from the first process's (see worker_main.py): each namespace
    # takes a multi-topic consumer over two 4-partition topics, about a dozen ids.
    second = start_worker(
        "worker-2",
        tmp_path,
        url,
        broker_url,
        burn_consumer_ids=50 * NAMESPACES + 500,
        settings=settings,
    )
    producer_side = open_sidecar(
        phase_one_config(url, broker_url), client_log=tmp_path / "phase-one-client.log"
    )
    # Phase one subscribes before its first send to a namespace: its consumer ids must not
    # collide with either worker's on pulsar-lite either (see worker_main.py).
    skip_consumer_ids(producer_side.client, 2 * (50 * NAMESPACES + 500))
    try:
        wait_ready(first, second, timeout=120)
        started = time.monotonic()
        enqueue_then_commit(producer_side, seeded)
        peaks = {first.name: 0, second.name: 0}

        growth: list[tuple[float, int]] = []  # (share handled, both workers' RSS)

        def all_handled() -> bool:
            for worker in (first, second):
                worker.assert_alive()
                peaks[worker.name] = max(peaks[worker.name], worker.peak_rss_kb())
            done = sum(w.handled("deleted", "already_gone", "archived") for w in (first, second))
            growth.append((done / len(released), sum(w.rss_kb() for w in (first, second))))
            return done >= len(released)

        # Polled a few times a second: each poll scrapes both workers' /metrics.
        deadline = time.monotonic() + scaled(240, 1800)
        while not all_handled():
            assert time.monotonic() < deadline, "not every pending deletion was handled"
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        during = broker_metrics(private_broker)
    finally:
        producer_side.close()
    reports = [first.stop(), second.stop()]
    stats = [report["stats"] for report in reports]

    # All handled, each exactly once, and none lost: a second deletion of a ledger would
    # have been "already_gone", and a lost message would leave its ledger behind.
    assert sum(s.get("deleted", 0) for s in stats) == len(released)
    assert all(s.get("archived", 0) == 0 and s.get("handed_back", 0) == 0 for s in stats)
    assert all(s.get("deleted", 0) > 0 for s in stats), f"the work was not shared: {stats}"
    # Read with kazoo from BookKeeper's tree, against what the test itself seeded.
    assert ZooKeeperLedgers(store.client).alive() == referenced  # type: ignore[attr-defined]

    # Bounded memory, and no leak: at most the pool's producers, one subscription per
    # namespace, a fixed set of threads; the broker agrees once both have stopped.
    assert max(peaks.values()) < PEAK_RSS_LIMIT_KB, peaks
    halfway = next(rss for share, rss in growth if share >= 0.5)
    assert growth[-1][1] <= 1.2 * halfway, growth  # no growth with the messages handled
    for report in reports:
        assert report["producers_open"] <= MAX_PRODUCERS
        assert report["subscribed"] == NAMESPACES
        assert report["threads"] < 40, report
    # Three clients (phase one, two workers), each at most the pool's producers, each of
    # them one per partition on the broker.
    assert metric_sum(during, "pulsar_broker_producers_count") <= 3 * MAX_PRODUCERS * PARTITIONS

    def broker_released_everything() -> bool:
        samples = broker_metrics(private_broker)
        return (
            metric_sum(samples, "pulsar_broker_producers_count") == 0
            and metric_sum(samples, "pulsar_broker_consumers_count") == 0
            and metric_sum(samples, "pulsar_active_connections") == 0
        )

    wait_until(broker_released_everything, 60, "the broker to see every client gone")
    backlog = metric_sum(
        broker_metrics(private_broker), "pulsar_subscription_back_log", subscription=SUBSCRIPTION
    )
    assert backlog == 0
    sampled = growth[:: max(1, len(growth) // 10)]
    print(
        "\nRSS of both workers (MB) by share handled: "
        + ", ".join(f"{share:.0%} {rss / 1024:.0f}" for share, rss in sampled)
        + f"; halfway {halfway / 1024:.0f}, end {growth[-1][1] / 1024:.0f}"
    )
    print(
        f"\nload: {len(released):,} deletions over {NAMESPACES} namespaces in {elapsed:.1f}s"
        f" ({len(released) / elapsed:,.0f}/s) by 2 processes; split "
        f"{[s.get('deleted', 0) for s in stats]}; peak RSS MB "
        f"{[round(v / 1024) for v in peaks.values()]}; long={LONG}"
    )
    backend.ledgers.close()


def phase_one_config(metadata_url: str, broker_url: str) -> ServiceConfiguration:
    return ServiceConfiguration().with_overrides(
        metadata_store_url=metadata_url,
        broker_service_url=broker_url,
        send_delay_seconds_of_two_phase_deletion=0,
        operation_timeout_seconds=60,
    )
