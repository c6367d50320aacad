"""The harness's faults and moves do what the scenario tests rely on, on the real cluster: an
unload with a destination moves the bundle there, a split makes two bundles of one, the
ZooKeeper leader killed is replaced and comes back as a member, a paused ZooKeeper answers
nothing until resumed, a bookie killed and a broker stopped start again on their data."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from deletion.domain.topics import NamespaceName, TopicName
from harness.process import wait_until
from harness.pulsar_cluster import ClusterAdmin, PulsarCluster
from harness.pulsar_cluster.workload import client
from harness.pulsar_cluster.zookeeper import four_letter


def test_a_bundle_moves_where_it_is_sent_and_splits_in_two(
    pulsar_cluster: PulsarCluster, cluster_admin: ClusterAdmin, cluster_namespace: NamespaceName
) -> None:
    topic = TopicName(cluster_namespace, "moved")
    cluster_admin.put(f"{cluster_admin.topic_path(topic)}", None)
    bundle = cluster_admin.bundle_of(topic)
    for _ in range(2):  # there and back: not the load manager's own choice
        owner = pulsar_cluster.broker_at(cluster_admin.owner_url(topic))
        other = next(b for b in pulsar_cluster.brokers if b is not owner)
        cluster_admin.unload(cluster_namespace, bundle, destination=other.broker_id)
        assert cluster_admin.owner_url(topic) == other.service_url

    before = cluster_admin.bundles(cluster_namespace)
    cluster_admin.split(cluster_namespace, bundle)
    after = cluster_admin.bundles(cluster_namespace)
    assert len(after) == len(before) + 1 and bundle not in after
    assert cluster_admin.bundle_of(topic) in after


def test_the_zookeeper_leader_is_replaced_and_a_paused_member_answers_when_resumed(
    pulsar_cluster: PulsarCluster,
) -> None:
    leader = pulsar_cluster.zookeeper_leader()
    leader.kill()
    started = time.monotonic()
    wait_until(_has_leader(pulsar_cluster), 120, "a new ZooKeeper leader", poll=0.5)
    print(f"new leader after {time.monotonic() - started:.1f} s")
    assert pulsar_cluster.zookeeper_leader() is not leader
    back = leader.start()
    print(f"the old leader back as {leader.mode()} after {back:.1f} s")

    member = next(z for z in pulsar_cluster.zookeepers if z is not leader)
    member.pause()
    try:
        assert four_letter(member.member.client_port, "ruok", timeout=2) == ""
    finally:
        member.resume()
    wait_until(member.ready, 60, "the resumed ZooKeeper serving", poll=0.5)


def test_a_bookie_and_a_broker_start_again_on_their_data(
    pulsar_cluster: PulsarCluster, cluster_namespace: NamespaceName, tmp_path: Path
) -> None:
    topic = TopicName(cluster_namespace, "kept")
    first = client(pulsar_cluster, tmp_path / "client.log")
    try:
        consumer = first.subscribe(topic.full_name, "keep")
        producer = first.create_producer(topic.full_name, batching_enabled=False)
        for index in range(25):  # three ledgers of 10 entries, over 2 of the 3 bookies
            producer.send(f"m-{index}".encode())
        producer.close()
        consumer.close()
    finally:
        first.close()

    bookie = pulsar_cluster.bookies[0]
    bookie.kill()
    print(f"bookie back after {bookie.start():.1f} s")
    broker = pulsar_cluster.brokers[1]
    print(f"broker stopped in {broker.stop():.1f} s (SIGKILL needed: {broker.forced})")
    assert not broker.forced
    print(f"broker back after {broker.start():.1f} s")

    second = client(pulsar_cluster, tmp_path / "client.log")
    try:
        consumer = second.subscribe(topic.full_name, "keep")
        received = [consumer.receive(60_000).data() for _ in range(25)]
    finally:
        second.close()
    assert received == [f"m-{index}".encode() for index in range(25)]


def _has_leader(cluster: PulsarCluster) -> Callable[[], bool]:
    def found() -> bool:
        try:
            cluster.zookeeper_leader()
        except LookupError:
            return False
        return True

    return found
