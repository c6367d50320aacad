"""Closing through `close_async`: a callback called more than once (a partitioned producer
calls back once per partition that failed to close) is answered once, and a close nobody
answers ends at the wait. `close()` sets a C++ promise per call: the second call of the same
close ends the process in std::terminate (seen in tests/integration/test_phase_one_hang.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pulsar

from transport.client import close_within


class Native:
    def __init__(self, *results: Any) -> None:
        self.results = results

    def close_async(self, callback: Callable[[Any], None]) -> None:
        for result in self.results:  # from the client's own threads, as the C++ client does
            threading.Thread(target=callback, args=(result,)).start()


class Untouchable:
    def close_async(self, callback: Callable[[Any], None]) -> None:
        raise AssertionError("the producer's close closed its client")


def wrapped(native: Native) -> pulsar.Producer:
    """A pulsar.Producer as the client makes one: it holds the native producer, and its
    client's native client as well (`p._client = self._client`)."""
    producer = pulsar.Producer.__new__(pulsar.Producer)
    producer._producer = native
    producer._client = Untouchable()
    return producer


def test_closed_is_none_and_already_closed_is_closed() -> None:
    assert close_within(wrapped(Native(pulsar.Result.Ok)), 5) is None
    assert close_within(Native(pulsar.Result.AlreadyClosed), 5) is None


def test_a_close_called_back_once_per_failed_partition_is_one_failure() -> None:
    failed = close_within(wrapped(Native(pulsar.Result.Timeout, pulsar.Result.Timeout)), 5)
    assert failed == str(pulsar.Result.Timeout)


def test_a_close_never_answered_ends_at_the_wait() -> None:
    assert close_within(Native(), 0.05) == "no answer within 0.05 s"
