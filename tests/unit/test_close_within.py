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


class HoldsOn:
    """Calls back at once, then keeps its copy of the callback a while, as the client's
    detached shutdown thread does (lib/ClientImpl.cc handleClose)."""

    def __init__(self) -> None:
        self.let_go = threading.Event()

    def close_async(self, callback: Callable[[Any], None]) -> None:
        def shutdown_task(held: Callable[[Any], None]) -> None:
            held(pulsar.Result.Ok)
            self.let_go.wait(0.3)  # still holding `held`
            self.let_go.set()

        threading.Thread(target=shutdown_task, args=(callback,)).start()


def test_the_close_returns_only_once_the_client_let_go_of_its_callback() -> None:
    """Else a command that prints and exits finalizes Python while the client's thread still
    has a callback to free (which takes the GIL): std::terminate, exit -6."""
    native = HoldsOn()
    assert close_within(native, 5) is None
    assert native.let_go.is_set()


def test_a_callback_never_let_go_is_waited_for_within_the_bound_only() -> None:
    kept: list[Callable[[Any], None]] = []

    class Keeps:
        def close_async(self, callback: Callable[[Any], None]) -> None:
            kept.append(callback)
            callback(pulsar.Result.Ok)

    assert close_within(Keeps(), 0.05) is None
    assert kept
