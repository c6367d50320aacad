"""Reconsume-later and dead-lettering, done as the Java client does them.

The Python client has neither, so this follows apache/pulsar's
pulsar-client/src/main/java/org/apache/pulsar/client/impl/ConsumerImpl.java
(`doReconsumeLater`, `getPropertiesMap`, `getOriginTopicNameStr`, `copyMessageKeysIfNeeded`,
and the `redeliveryCount >= deadLetterPolicy.getMaxRedeliverCount()` check in
`messageReceived` with `processPossibleToDLQ`) and RetryMessageUtil.java:
copy the properties; put REAL_TOPIC (the topic without `-partition-N`), REAL_SUBSCRIPTION
(which the real 4.0 client writes too), ORIGIN_MESSAGE_IDY_TIME and ORIGIN_MESSAGE_ID if
absent; increment RECONSUMETIMES; set
DELAY_TIME in milliseconds; send the same payload, key and ordering key to the retry topic
with that delay, and only once that send is acknowledged ack the original. Past the
maximum, the same properties go to the archive (our dead-letter topic), without delay.

Differences, and why: Java strips everything from the last `-partition-` on; we strip only
a real partition suffix (Java's `TopicName.getPartitionIndex` rule), so a topic named
`x-partition-01` keeps its name. The Python client neither reports nor sets Java's
`partition_key_b64_encoded` flag, so a key set with Java's `keyBytes` is carried as the
base64 text it arrived as.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from consumers.received import Acknowledger, ReceivedMessage
from core.errors import DecodeError
from deletion.domain import message_properties as props
from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from transport.client import java_message_id
from transport.producer_pool import ProducerPool

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    delay_seconds: float
    max_reconsume_times: int
    send_timeout_seconds: float = 30.0
    # DeadLetterPolicy.maxRedeliverCount: a message handed back (negatively acked) once it
    # has been redelivered this often goes to the archive instead; None never does.
    max_redeliver_count: int | None = None


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
        delay_seconds: float | None = None,
    ) -> str | None:
        """Send to the retry topic, or past the maximum to the archive: then return why.
        The delay is the policy's unless the caller knows better (`delay_seconds`)."""
        delay = self._policy.delay_seconds if delay_seconds is None else max(delay_seconds, 0.0)
        properties = self._carried_properties(message)
        times = props.reconsume_times(message.properties()) + 1
        properties[props.RECONSUME_TIMES] = str(times)
        properties[props.DELAY_TIME] = str(int(delay * 1000))
        if times > self._policy.max_reconsume_times:
            tries = self._policy.max_reconsume_times
            reason = f"gave up after {tries} reconsume{'' if tries == 1 else 's'}: {reason}"
            self._send_archived(message, namespace, properties, reason)
            consumer.acknowledge(message)
            return reason
        future = self._pool.send(
            namespace.retry_topic,
            message.data(),
            properties,
            key=message.partition_key() or None,
            delay_seconds=delay,
            ordering_key=_ordering_key(message),
        )
        future.result(timeout=self._policy.send_timeout_seconds)
        consumer.acknowledge(message)
        return None

    def hand_back(
        self,
        consumer: Acknowledger,
        message: ReceivedMessage,
        namespace: NamespaceName,
        reason: str,
    ) -> str | None:
        """Negatively ack for redelivery, or, redelivered too often, archive: then say why.

        Java marks a message that arrives with `redeliveryCount >= maxRedeliverCount` and,
        when it is then negatively acked, sends it to the dead-letter topic and acks it
        instead of redelivering it (ConsumerImpl `messageReceived`, `processPossibleToDLQ`).
        If the archive cannot be reached either, it is handed back as before: nothing lost.
        """
        limit = self._policy.max_redeliver_count
        count = _redelivery_count(message)
        if limit is not None and count >= limit:
            why = f"handed back after {count} redeliveries: {reason}"
            try:
                self.archive(consumer, message, namespace, why)
                return why
            except Exception as exc:  # the archive failing too: redeliver instead
                log.warning("archiving a much-redelivered message failed", error=str(exc))
        consumer.negative_acknowledge(message)
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
            namespace.archive_topic,
            message.data(),
            properties,
            key=message.partition_key() or None,
            ordering_key=_ordering_key(message),
        )
        future.result(timeout=self._policy.send_timeout_seconds)

    @staticmethod
    def _carried_properties(message: ReceivedMessage) -> dict[str, str]:
        properties = dict(message.properties())
        origin = java_message_id(message.message_id())
        properties.setdefault(props.REAL_TOPIC, _real_topic(message.topic_name()))
        properties.setdefault(props.REAL_SUBSCRIPTION, SUBSCRIPTION)
        properties.setdefault(props.ORIGIN_MESSAGE_ID_Y_TIME, origin)
        properties.setdefault(props.ORIGIN_MESSAGE_ID, origin)
        properties.setdefault(props.FIRST_ATTEMPT_TIME, str(message.publish_timestamp()))
        return properties


def _real_topic(topic: str) -> str:
    """The topic a partition belongs to, as REAL_TOPIC names it (getOriginTopicNameStr)."""
    try:
        parsed = TopicName.parse(topic)
    except DecodeError:
        return topic
    return parsed.base.full_name if parsed.partition_index is not None else topic


# The worker's ReceivedMessage does not promise these two; the client's messages have them.
def _ordering_key(message: ReceivedMessage) -> str | None:
    method = getattr(message, "ordering_key", None)
    if method is None:
        return None
    try:
        key = method()
    except UnicodeDecodeError:  # bytes the client cannot hand over as text: none to copy
        return None
    return key if isinstance(key, str) and key else None


def _redelivery_count(message: ReceivedMessage) -> int:
    method = getattr(message, "redelivery_count", None)
    count = method() if method is not None else 0
    return count if isinstance(count, int) else 0
