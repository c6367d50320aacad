"""Our schema registered once per topic, before anything of ours connects to it with the schema.

Why: a real broker leaks a ledger for every first schema put but one. Pulsar 4.0.8's
pulsar-broker/src/main/java/org/apache/pulsar/broker/service/schema/BookkeeperSchemaStorage.java
`putSchema` on a topic with no schema locator yet calls `createNewSchema`, which first
writes the schema to a **new ledger** (`addNewSchemaEntryToStore`, `createLedger`) and only
then creates the locator znode `/schemas/<tenant>/<ns>/<topic>` with expected version -1
(`createSchemaLocator`). Concurrent first puts each make a ledger; one creates the locator,
the others fail with BadVersion/AlreadyExists and `put` starts them over, now finding the
schema (SchemaRegistryServiceImpl `putSchemaIfAbsent`, `getSchemaVersionBySchemaData`), and
nothing deletes the ledgers they made (only `updateSchemaLocator`, the path of a second
version, deletes its loser's ledger: apache/pulsar#18701; the first-version path is
apache/pulsar#18292, fixed upstream after 4.0 by #25514). The registry keeps one schema for a
partitioned topic (AbstractTopic `getSchemaId`: the partitioned name), and every partition's
first producer or consumer asks for it at once: PersistentTopic
`addSchemaIfIdleOrCheckCompatible` adds a consumer's schema to an idle topic with none,
ServerCnx `tryAddSchema` a producer's always. Seen on a stock 4.0.8 standalone: the first
start of `run` (its worker's consumer on the deletion topic's 4 partitions) left 1 to 5 schema
ledgers unreferenced.

So before the first connection of a process that declares the schema on a topic, the schema
is registered once on the topic's base name: through `register` (the admin API, which does
one put) where there is one, otherwise by making the same connection on the topic's first
partition alone (one put), then the rest (which find the schema and store nothing). Within a
process this is serialized; two processes registering the same new topic at the same moment
can still race (the broker's bug; our audit finds and reclaims what that leaves).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import pulsar
import structlog

log = structlog.get_logger(__name__)

# Registers our schema on one topic (its base name); True once the registry holds it or
# refused it for good (another schema there: the connection then says so), False when this
# way is not open (no admin rights): then the first partition does it. Raises when it
# cannot answer now.
Register = Callable[[str], bool]
# Makes the connection the caller wants (a producer, a consumer) on one topic, to be closed.
Connect = Callable[[str], Any]


def base_topic(topic: str) -> str:
    """Java's `TopicName.getPartitionIndex`: only the canonical digits of an int make a
    partition (`t-partition-01` is a topic of its own)."""
    head, sep, tail = topic.rpartition("-partition-")
    canonical = tail.isdigit() and str(int(tail)) == tail and int(tail) < 2**31
    return head if sep and canonical else topic


class Registration:
    """Which topics' schema this process has registered, and how it registers one."""

    def __init__(self, register: Register | None = None) -> None:
        self._register = register
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, client: pulsar.Client, topics: Iterable[str], connect: Connect) -> None:
        """Register the schema of each of `topics` not yet registered by this process; a
        failure to do so now raises (what `connect` or `register` raise), and nothing of
        ours connects with the schema meanwhile."""
        for topic in topics:
            base = base_topic(topic)
            if base in self._done:
                continue
            with self._lock:  # one registration at a time: two would race as above
                if base not in self._done:
                    self._registered(client, base, connect)
                    self._done.add(base)

    def _registered(self, client: pulsar.Client, base: str, connect: Connect) -> None:
        if self._register is not None and self._register(base):
            return
        partitions = client.get_topic_partitions(base)
        if len(partitions) < 2:
            return  # one topic, one connection, one put
        try:
            connect(partitions[0]).close()
        except pulsar.IncompatibleSchema as exc:  # the connection itself says what to do
            log.info("the topic holds another schema", topic=base, error=str(exc))
