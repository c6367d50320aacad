"""What the worker needs of a received message and of the consumer that acks it."""

from __future__ import annotations

from typing import Any, Protocol

from deletion.message_properties import delay_ms


class ReceivedMessage(Protocol):
    def data(self) -> bytes: ...

    def properties(self) -> dict[str, str]: ...

    def publish_timestamp(self) -> int: ...

    def topic_name(self) -> str: ...

    def message_id(self) -> Any: ...

    def partition_key(self) -> str: ...


class Acknowledger(Protocol):
    def acknowledge(self, message: Any) -> None: ...

    def negative_acknowledge(self, message: Any) -> None: ...


def not_before_seconds(message: ReceivedMessage, default_delay_seconds: float) -> float:
    """When the message may be acted on: publish time plus its delay.

    Brokers may deliver a delayed message early (non-Shared subscriptions, delayed delivery
    off, tick granularity, brokers that ignore delays), so the consumer enforces this itself.
    """
    delay = delay_ms(message.properties())
    delay_seconds = default_delay_seconds if delay is None else delay / 1000.0
    return message.publish_timestamp() / 1000.0 + delay_seconds
