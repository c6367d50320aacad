"""pulsar-lite's one limit that shows with several clients on one subscription.

pulsar-lite refuses a consumer whose id another connection already uses on the same
subscription ("Consumer 0 already exists"), and every client numbers its consumers from 0.
A client that first uses up `count` ids (`skip_consumer_ids`) takes its real ids from
`count` on, disjoint from another client's below that. A real Pulsar broker keys consumers
by connection and needs none of this. The product itself avoids the collision between a
running worker and a short-lived `enqueue`: the worker's process sets up its namespaces'
subscriptions before it subscribes (producers.PhaseOne.prepared).
"""

from __future__ import annotations

import os

import pulsar


def skip_consumer_ids(client: pulsar.Client, count: int) -> None:
    """Use up at least `count` (and fewer than `count` + 4) consumer ids of `client`, on a
    private topic of this process.

    pulsar-lite auto-creates every topic partitioned (its `default_partitions`, 4 in the
    tests; a name ending in `-partition-0` too), and a subscribe takes one id per partition:
    a subscribe per id burnt four times as many as asked."""
    topic = f"persistent://ledger-janitor-burn/ids/p{os.getpid()}"
    per_subscribe = max(1, len(client.get_topic_partitions(topic)))
    for _ in range(-(-count // per_subscribe)):
        client.subscribe(topic, "burn", consumer_type=pulsar.ConsumerType.Shared).close()
