"""Topics and subscriptions made before the first send to a namespace.

A real broker deletes an inactive topic that has no subscription (the defaults
`brokerDeleteInactiveTopicsEnabled=true`, `delete_when_no_subscriptions`), messages and all,
and keeps nothing for a topic without a subscription or retention. So the deletion, retry
and archive topics get their durable subscriptions before anything is written to them: a
pending deletion sent before any worker subscribed must still be there for the worker.

With an admin URL, through the REST API as apache/pulsar's
pulsar-broker/src/main/java/org/apache/pulsar/broker/admin/v2/PersistentTopics.java
defines it: `createPartitionedTopic` is `PUT .../{topic}/partitions` with the partition
count as the JSON body (409: it already exists); `createSubscription` is
`PUT .../{topic}/subscription/{subscriptionName}` with a `ResetCursorData` body (a message
id, `{"ledgerId": -1, "entryId": -1}` being `MessageId.earliest`; without a body the broker
takes `latest`), made on every partition of a partitioned topic (409: it already exists).
Without one, through the client: a Shared consumer subscribes and closes, and the durable
subscription stays. The archive's subscription is the one `archive list|drain` read, as
Java's `DeadLetterPolicy.initialSubscriptionName` names one on the dead-letter topic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import pulsar

from deletion.domain.topics import (
    ARCHIVE_SUBSCRIPTION,
    DELETION_TOPIC,
    SUBSCRIPTION,
    NamespaceName,
    TopicName,
)
from producers.admin_rest import AdminRest
from transport.client import translate
from transport.schema import subscribe

EARLIEST = {"ledgerId": -1, "entryId": -1}  # MessageId.earliest, as ResetCursorData


def subscriptions(namespace: NamespaceName) -> list[tuple[str, str]]:
    """(topic, subscription) pairs that must exist before the namespace's first send."""
    return [
        (namespace.deletion_topic, SUBSCRIPTION),
        (namespace.retry_topic, SUBSCRIPTION),
        *archive_subscription(namespace),
    ]


def archive_subscription(namespace: NamespaceName) -> list[tuple[str, str]]:
    """The one pair a worker does not make by subscribing: the archive's."""
    return [(namespace.archive_topic, ARCHIVE_SUBSCRIPTION)]


Pairs = Callable[[NamespaceName], list[tuple[str, str]]]


class AdminTopicSetup:
    """The partitioned deletion topic, the namespace's topics' schema and the subscriptions,
    through the admin API. `register(topic)` registers our schema on a topic once
    (transport/schema_registration.py): for all three topics whichever `pairs` are made, so
    that a Java peer finds it before any message, and so that no partition's first consumer
    or producer registers it (the worker's consumers once did, and leaked ledgers)."""

    def __init__(
        self, admin: AdminRest, partitions: int, register: Callable[[str], None] | None = None
    ) -> None:
        self._admin = admin
        self._partitions = partitions
        self._register = register

    def __call__(self, namespace: NamespaceName, pairs: Pairs = subscriptions) -> None:
        deletion = TopicName(namespace, DELETION_TOPIC)
        self._admin.put(deletion, "partitions", self._partitions, also_ok=(409,))
        if self._register is not None:
            for topic, _ in subscriptions(namespace):
                self._register(topic)
        for topic, subscription in pairs(namespace):
            operation = f"subscription/{subscription}"
            self._admin.put(TopicName.parse(topic), operation, EARLIEST, also_ok=(409,))


class ClientTopicSetup:
    def __init__(self, client: pulsar.Client) -> None:
        self._client = client

    def __call__(self, namespace: NamespaceName, pairs: Pairs = subscriptions) -> None:
        for topic, subscription in pairs(namespace):
            try:
                # With our schema: registered once, before the first send.
                consumer = subscribe(
                    self._client,
                    topic,
                    subscription,
                    consumer_type=pulsar.ConsumerType.Shared,
                    initial_position=pulsar.InitialPosition.Earliest,
                )
                consumer.close()
            except pulsar.PulsarException as exc:
                raise translate(exc, f"create subscription {subscription} on {topic}") from exc


class TopicSetup(Protocol):
    def __call__(self, namespace: NamespaceName, pairs: Pairs = ...) -> None: ...


class PreparedNamespaces:
    """Runs the setup once per namespace, so a send costs a set lookup; a failed setup is
    tried again on the next send."""

    def __init__(self, setup: TopicSetup) -> None:
        self._setup = setup
        self._done: set[NamespaceName] = set()
        self._archives: set[NamespaceName] = set()
        self._lock = threading.Lock()

    def ensure_archive(self, namespace: NamespaceName) -> None:
        """Only the archive's subscription (a worker makes its own by subscribing)."""
        if namespace in self._done or namespace in self._archives:
            return
        with self._lock:
            if namespace not in self._done and namespace not in self._archives:
                self._setup(namespace, archive_subscription)
                self._archives.add(namespace)

    def ensure_topic(self, topic: str) -> None:
        self.ensure(TopicName.parse(topic).namespace)

    def ensure(self, namespace: NamespaceName) -> None:
        if namespace in self._done:
            return
        with self._lock:
            if namespace not in self._done:
                self._setup(namespace)
                self._done.add(namespace)
