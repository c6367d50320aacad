"""`archive list`: every namespace's archive read at once, each to its end as soon as the
broker says where that is, and a ledger archived more than once shown once.

Where the time went (issue 31: 8.1 s for 3 namespaces): not in subscribing (under 10 ms)
but in waiting. An archive counted as read only after `wait_seconds` (2 s) without a new
message, and the namespaces were read one after the other: 3 namespaces, 6 s of waiting.
Now the namespaces are read at the same time (one wait for all), and an archive is read as
soon as its last message has arrived, where the broker names that message:

- GetLastMessageId: in apache/pulsar's
  pulsar-broker/src/main/java/org/apache/pulsar/broker/service/ServerCnx.java,
  `handleGetLastMessageId` answers `topic.getLastPosition()`, the managed ledger's last
  confirmed entry, with entry -1 when its current ledger holds no entry (then where the
  topic ends is not known here);
- the first consumer of a Shared subscription reads it in order from its mark-delete
  position: PersistentDispatcherMultipleConsumers.addConsumer rewinds the cursor when the
  subscription has no consumer (`cursor.rewind()`), and the dispatcher reads forward from
  there, skipping what was acknowledged. So once the last message has arrived, every
  unacknowledged one before it has too.

The broker answers GetLastMessageId for one topic, so for an archive that is not
partitioned: what a stock broker auto-creates (`allowAutoTopicCreationType=non-partitioned`).
The client refuses it on a partitioned topic's consumer, and pulsar-lite (whose auto-created
topics are partitioned) refuses it outright (OperationNotSupported); an archive whose last
message was acknowledged already (a drain settled it) never delivers it. Those count as read
after `wait_seconds` without a message, as before, all namespaces waiting side by side. A
message archived while the listing runs may or may not be in it, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pulsar

from consumers.archive import ArchivedMessage, archive_consumer
from deletion.domain.topics import NamespaceName

# Archives read at once; each waits in the client (no interpreter lock held), not on a core.
READERS = 64
Progress = Callable[[NamespaceName], None]


def list_archives(
    client: pulsar.Client,
    namespaces: Iterable[NamespaceName],
    wait_seconds: float = 2.0,
    on_message: Progress | None = None,
    on_read: Progress | None = None,
) -> dict[NamespaceName, list[ArchivedMessage]]:
    """What is archived now in each namespace, without consuming it, in the order the
    subscription delivers it. `on_message` is called for every message received, `on_read`
    once a namespace's archive is read (both from the listing's threads)."""
    wanted = list(dict.fromkeys(namespaces))
    with ThreadPoolExecutor(READERS, "archive-list") as pool:
        reads = {
            ns: pool.submit(_read_archive, client, ns, wait_seconds, on_message) for ns in wanted
        }
        if on_read is not None:
            for ns, read in reads.items():
                read.add_done_callback(lambda _, ns=ns: on_read(ns))  # type: ignore[misc]
        return {ns: read.result() for ns, read in reads.items()}


def list_archive(
    client: pulsar.Client, namespace: NamespaceName, wait_seconds: float = 2.0
) -> list[ArchivedMessage]:
    """What is archived now in one namespace, without consuming it."""
    return list_archives(client, [namespace], wait_seconds)[namespace]


def _read_archive(
    client: pulsar.Client,
    namespace: NamespaceName,
    wait_seconds: float,
    on_message: Progress | None,
) -> list[ArchivedMessage]:
    with archive_consumer(client, namespace) as consumer:
        return _read(namespace, consumer, wait_seconds, on_message)


def _read(
    namespace: NamespaceName, consumer: Any, wait_seconds: float, on_message: Progress | None
) -> list[ArchivedMessage]:
    last = _last_message(consumer)
    found: list[ArchivedMessage] = []
    while True:
        try:
            received = consumer.receive(int(wait_seconds * 1000))
        except pulsar.Timeout:
            return found
        found.append(ArchivedMessage.of(namespace, received))
        if on_message is not None:
            on_message(namespace)
        if last is not None and _at_or_after(received.message_id(), last):
            return found


def _last_message(consumer: Any) -> tuple[int, int, int] | None:
    """(ledger, entry, batch index) of the partition's last message; None when the broker
    does not say, or names no entry."""
    try:
        last = consumer.get_last_message_id()
    except pulsar.PulsarException:  # pulsar-lite: OperationNotSupported
        return None
    if last.entry_id() < 0:
        return None
    return last.ledger_id(), last.entry_id(), last.batch_index()


def _at_or_after(message_id: Any, last: tuple[int, int, int]) -> bool:
    ledger, entry, batch = last
    position = (message_id.ledger_id(), message_id.entry_id())
    if position != (ledger, entry):
        return position > (ledger, entry)
    return batch < 0 or message_id.batch_index() >= batch


@dataclass(frozen=True)
class ArchivedLedger:
    """One ledger's messages in the archive (a ledger archived, requeued by a drain, then
    archived again is there twice): the newest archiving speaks for them."""

    latest: ArchivedMessage
    archivings: int
    first_try_ms: int | None  # the earliest over all of them
    message_ids: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            **self.latest.as_json(),
            "first_try_ms": self.first_try_ms,
            "archivings": self.archivings,
            "message_ids": list(self.message_ids),
        }


def by_ledger(messages: Iterable[ArchivedMessage]) -> list[ArchivedLedger]:
    """One row a ledger (same namespace, topic, component, type and id), in the order each
    was first seen; an undecodable message is a row of its own."""
    groups: dict[object, list[ArchivedMessage]] = {}
    for archived in messages:
        info = archived.info
        key: object = archived.message_id
        if info is not None:
            key = (archived.namespace, info.topic_name, info.ledger_component,
                   info.ledger_type, info.ledger_id)  # fmt: skip
        groups.setdefault(key, []).append(archived)
    rows = []
    for group in groups.values():
        # The newest archiving: the latest archive time; among equals, the later message.
        latest = max(enumerate(group), key=lambda pair: (pair[1].last_try_ms or 0, pair[0]))[1]
        tries = [a.first_try_ms for a in group if a.first_try_ms is not None]
        rows.append(
            ArchivedLedger(
                latest=latest,
                archivings=len(group),
                first_try_ms=min(tries) if tries else None,
                message_ids=tuple(a.message_id for a in group),
            )
        )
    return rows
