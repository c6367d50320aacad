"""Real leaks in the cluster: ledgers made with BookKeeper's own Java client and the custom
metadata Pulsar writes (`tests/real_pulsar/java/LeakMaker.java`), recorded nowhere (what a
broker that crashed between creating a ledger and recording it leaves), and their pending
deletions enqueued as an operator does, with `ledger-janitor enqueue`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from deletion.domain.topics import TopicName, java_url_encode
from harness.java import JavaPrograms
from harness.process import ROOT, run_cli
from harness.pulsar_cluster.cluster import PulsarCluster
from harness.pulsar_dist import distribution

JAVA = ROOT / "tests" / "real_pulsar" / "java"


def java_programs(out: Path) -> JavaPrograms:
    """LeakMaker and the other Java programs, built into `out` against the distribution."""
    return JavaPrograms(JAVA, out, distribution()).compile()


def managed_ledger_name(topic: TopicName) -> str:
    """`tenant/ns/persistent/<encoded local name>`: what Pulsar writes as pulsar/managed-ledger."""
    ns = topic.namespace
    return f"{ns.tenant}/{ns.namespace}/persistent/{java_url_encode(topic.local_name)}"


def plant(
    cluster: PulsarCluster, java: JavaPrograms, topic: TopicName, count: int, size: int = 4096
) -> set[int]:
    """`count` leaks of `topic`, `size` bytes each (one bookie each), recorded nowhere."""
    (made,) = java.run("LeakMaker", cluster.zookeeper_hosts, managed_ledger_name(topic), "-",
                       count, size, timeout=600)  # fmt: skip
    return {int(ledger) for ledger in made["ledgers"]}


def plant_buckets(
    cluster: PulsarCluster, java: JavaPrograms, topic: TopicName, cursor: str, key: str,
    count: int = 1,
) -> set[int]:  # fmt: skip
    """`count` bucket snapshot ledgers of subscription `cursor` of `topic` for bucket `key`
    (`#pulsar.internal.delayed.bucket_<start>_<end>`), recorded in no cursor."""
    (made,) = java.run("LeakMaker", cluster.zookeeper_hosts, f"bucket:{topic.full_name}", cursor,
                       count, 1024, key, timeout=600)  # fmt: skip
    return {int(ledger) for ledger in made["ledgers"]}


def enqueue_leaks(cluster: PulsarCluster, topic: TopicName, ledgers: Iterable[int]) -> None:
    """`ledger-janitor enqueue` of `ledgers`, delivered after 2 s; it must enqueue them all."""
    done = run_cli(
        "enqueue", topic.full_name, *map(str, sorted(ledgers)),
        "--metadata-store", cluster.metadata_url, "--broker-url", cluster.service_url,
        "--set", "sendDelaySecondsOfTwoPhaseDeletion=2", timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"enqueue exited {done.returncode}:\n{done.stderr[-3000:]}")
