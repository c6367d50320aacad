"""What the worker needs of a received message and of the consumer that acks it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from core.clock import EpochSeconds
from deletion.domain.message_properties import delay_ms
from deletion.domain.topics import NamespaceName


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


def not_before_seconds(
    message: ReceivedMessage, floor_delay_seconds: float, clock_skew_seconds: float
) -> EpochSeconds:
    """When the message may be acted on: publish time plus its delay, plus the skew allowance.

    Brokers may deliver a delayed message early (non-Shared subscriptions, delayed delivery
    off, tick granularity, brokers that ignore delays), so the consumer enforces this itself.
    Neither the message's own `DELAY_TIME` nor the producer's clock is trusted: the
    configured send delay is a floor, and the allowance covers a producer clock behind ours.
    """
    delay = delay_ms(message.properties())
    delay_seconds = max(floor_delay_seconds, 0.0 if delay is None else delay / 1000.0)
    return EpochSeconds(message.publish_timestamp() / 1000.0 + delay_seconds + clock_skew_seconds)


@dataclass(frozen=True)
class Arrival:
    """A received message, the consumer that acks it, and what is worked out once on arrival:
    the namespace whose deletion topic it came from and when it may be acted on."""

    consumer: Acknowledger
    message: ReceivedMessage
    namespace: NamespaceName
    due: EpochSeconds
