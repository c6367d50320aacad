"""Reconsume-later and dead-lettering, done exactly as the Java client does them.

The Python client has neither, so: copy the properties, set REAL_TOPIC and
ORIGIN_MESSAGE_ID if absent, increment RECONSUMETIMES, set DELAY_TIME in milliseconds,
send the same payload and key to the retry topic with that delay, and only once that send
is acknowledged ack the original. Past the maximum, the same properties go to the archive.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from deletion import message_properties as props
from deletion.topics import NamespaceName
from ledger_janitor.broker import java_message_id
from producers.pool import ProducerPool

from .received import Acknowledger, ReceivedMessage


@dataclass(frozen=True)
class RetryPolicy:
    delay_seconds: float
    max_reconsume_times: int
    send_timeout_seconds: float = 30.0


class Reconsumer:
    def __init__(
        self, pool: ProducerPool, policy: RetryPolicy, clock: Callable[[], float] = time.time
    ) -> None:
        self._pool = pool
        self._policy = policy
        self._clock = clock

    def reconsume_later(
        self,
        consumer: Acknowledger,
        message: ReceivedMessage,
        namespace: NamespaceName,
        reason: str,
    ) -> str | None:
        """Send to the retry topic, or past the maximum to the archive: then return why."""
        properties = self._carried_properties(message)
        times = props.reconsume_times(message.properties()) + 1
        properties[props.RECONSUME_TIMES] = str(times)
        properties[props.DELAY_TIME] = str(int(self._policy.delay_seconds * 1000))
        if times > self._policy.max_reconsume_times:
            reason = f"gave up after {self._policy.max_reconsume_times} reconsumes: {reason}"
            self._send_archived(message, namespace, properties, reason)
            consumer.acknowledge(message)
            return reason
        future = self._pool.send(
            namespace.retry_topic,
            message.data(),
            properties,
            key=message.partition_key() or None,
            delay_seconds=self._policy.delay_seconds,
        )
        future.result(timeout=self._policy.send_timeout_seconds)
        consumer.acknowledge(message)
        return None

    def archive(
        self,
        consumer: Acknowledger,
        message: ReceivedMessage,
        namespace: NamespaceName,
        reason: str,
    ) -> None:
        """Move the message, bytes intact, to the archive with the reason; then ack it."""
        self._send_archived(message, namespace, self._carried_properties(message), reason)
        consumer.acknowledge(message)

    def _send_archived(
        self,
        message: ReceivedMessage,
        namespace: NamespaceName,
        properties: dict[str, str],
        reason: str,
    ) -> None:
        properties[props.ARCHIVE_REASON] = reason
        properties[props.ARCHIVE_TIME] = str(int(self._clock() * 1000))
        future = self._pool.send(
            namespace.archive_topic, message.data(), properties, key=message.partition_key() or None
        )
        future.result(timeout=self._policy.send_timeout_seconds)

    @staticmethod
    def _carried_properties(message: ReceivedMessage) -> dict[str, str]:
        properties = dict(message.properties())
        properties.setdefault(props.REAL_TOPIC, message.topic_name())
        properties.setdefault(props.ORIGIN_MESSAGE_ID, java_message_id(message.message_id()))
        properties.setdefault(props.FIRST_ATTEMPT_TIME, str(message.publish_timestamp()))
        return properties
