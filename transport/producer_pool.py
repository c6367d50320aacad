"""A bounded pool of producers, created lazily per topic and closed least-recently-used first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import pulsar
import structlog

from core.errors import JanitorError
from transport.client import CLOSE_MARGIN_SECONDS, close_within, send_async, translate
from transport.schema import create_producer

log = structlog.get_logger(__name__)


class ProducerPool:
    def __init__(
        self,
        client: pulsar.Client,
        max_producers: int = 64,
        send_timeout_ms: int = 30_000,
        prepare: Callable[[str], None] | None = None,
    ):
        """`prepare(topic)` runs before a topic's producer is made: its subscriptions must
        exist before the first message, or the broker may delete the topic with it."""
        self._client = client
        self._prepare = prepare
        self._max = max_producers
        self._send_timeout_ms = send_timeout_ms
        self._producers: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def send(
        self,
        topic: str,
        payload: bytes,
        properties: Mapping[str, str],
        key: str | None = None,
        delay_seconds: float = 0.0,
        ordering_key: str | None = None,
    ) -> Future[Any]:
        """Send on the topic's producer; the future fails if the producer cannot be made."""
        with self._lock:
            try:
                producer = self._producer(topic)
            except pulsar.PulsarException as exc:
                failed: Future[Any] = Future()
                failed.set_exception(translate(exc, f"create producer for {topic}"))
                return failed
            except JanitorError as exc:
                unprepared: Future[Any] = Future()
                unprepared.set_exception(exc)
                return unprepared
            return send_async(producer, payload, properties, key, delay_seconds, ordering_key)

    def _producer(self, topic: str) -> Any:
        if self._closed:
            raise pulsar.AlreadyClosed("producer pool closed")
        producer = self._producers.get(topic)
        if producer is not None:
            self._producers.move_to_end(topic)
            return producer
        if self._prepare is not None:
            self._prepare(topic)
        # Batching off: each pending deletion is its own message with its own delay.
        producer = create_producer(
            self._client,
            topic,
            batching_enabled=False,
            block_if_queue_full=True,
            send_timeout_millis=self._send_timeout_ms,
        )
        self._producers[topic] = producer
        while len(self._producers) > self._max:
            _, evicted = self._producers.popitem(last=False)
            self._close(evicted)
        return producer

    def _close(self, producer: Any) -> None:
        try:
            producer.flush()
        except pulsar.PulsarException as exc:
            log.warning("flushing producer failed", topic=producer.topic(), error=str(exc))
        failed = close_within(producer, self._send_timeout_ms / 1000 + CLOSE_MARGIN_SECONDS)
        if failed is not None:
            log.warning("closing producer failed", topic=producer.topic(), error=failed)

    def __contains__(self, topic: object) -> bool:
        """Whether the topic's producer is open. Not under the lock, which a producer being
        made holds for as long as the broker takes: a dict's membership is read at once."""
        return topic in self._producers

    def __len__(self) -> int:
        return len(self._producers)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            while self._producers:
                self._close(self._producers.popitem()[1])
