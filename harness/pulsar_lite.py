"""pulsar-lite's one limit that shows with several clients on one subscription.

pulsar-lite refuses a consumer whose id another connection already uses on the same
subscription ("Consumer 0 already exists"), and every client numbers its consumers from 0.
A client that opens and closes `count` throwaway consumers first takes its real ids from
`count` on, disjoint from another client's below that. A real Pulsar broker keys consumers
by connection and needs none of this.
"""

from __future__ import annotations

import os

import pulsar


def skip_consumer_ids(client: pulsar.Client, count: int) -> None:
    """Use up `count` consumer ids of `client` on a private topic of this process."""
    topic = f"persistent://ledger-janitor-burn/ids/p{os.getpid()}"
    for _ in range(count):
        client.subscribe(topic, "burn", consumer_type=pulsar.ConsumerType.Shared).close()
