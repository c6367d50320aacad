"""The schema registered once per topic before anything connects with it (pure logic; the real
broker's side is tests/real_pulsar/test_own_leaks.py)."""

from __future__ import annotations

from typing import Any

import pulsar
import pytest

from core.errors import TransientMetadataError
from transport.schema_registration import Registration, base_topic

T = "persistent://t/ns/__ledger_deletion"


class FakeClient:
    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.lookups: list[str] = []

    def get_topic_partitions(self, topic: str) -> list[str]:
        self.lookups.append(topic)
        if self.partitions == 0:
            return [topic]
        return [f"{topic}-partition-{index}" for index in range(self.partitions)]


class Connection:
    def __init__(self, made: list[str], topic: str) -> None:
        made.append(topic)
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _ensure(registration: Registration, client: FakeClient, *topics: str) -> list[str]:
    made: list[str] = []
    registration.ensure(client, topics, lambda one: Connection(made, one))
    return made


def test_a_partitioned_topic_is_registered_through_its_first_partition_once() -> None:
    client, registration = FakeClient(4), Registration()
    assert _ensure(registration, client, T) == [f"{T}-partition-0"]
    assert _ensure(registration, client, T, f"{T}-partition-3") == []  # the same schema
    assert client.lookups == [T]


def test_a_topic_of_one_partition_or_none_needs_no_connection_first() -> None:
    client = FakeClient(0)
    assert _ensure(Registration(), client, "persistent://t/ns/x-partition-01") == []
    assert client.lookups == ["persistent://t/ns/x-partition-01"]  # not a partition suffix


def test_the_admin_api_registers_it_and_the_client_is_not_asked() -> None:
    registered: list[str] = []

    def register(topic: str) -> bool:
        registered.append(topic)
        return True

    client, registration = FakeClient(4), Registration(register)
    assert _ensure(registration, client, f"{T}-partition-2", T) == []
    assert registered == [T]
    assert client.lookups == []


def test_an_admin_api_that_will_not_falls_back_to_the_first_partition() -> None:
    client = FakeClient(2)
    assert _ensure(Registration(lambda _: False), client, T) == [f"{T}-partition-0"]


def test_a_registration_that_fails_now_is_tried_again_and_nothing_connects() -> None:
    answers: list[Any] = [TransientMetadataError("HTTP 503"), True]

    def register(topic: str) -> bool:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return bool(answer)

    registration = Registration(register)
    with pytest.raises(TransientMetadataError):
        _ensure(registration, FakeClient(4), T)
    assert _ensure(registration, FakeClient(4), T) == []
    assert answers == []


def test_a_topic_holding_another_schema_is_left_to_the_connection_to_report() -> None:
    def refused(topic: str) -> Any:
        raise pulsar.IncompatibleSchema("IncompatibleSchema")

    registration = Registration()
    registration.ensure(FakeClient(4), [T], refused)
    assert _ensure(registration, FakeClient(4), T) == []  # not asked again


def test_the_base_topic_is_javas() -> None:
    assert base_topic(f"{T}-partition-7") == T
    assert base_topic(f"{T}-partition-07") == f"{T}-partition-07"
    assert base_topic(T) == T
