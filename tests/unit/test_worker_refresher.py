"""The subscription refresher after `stop`: `stop` does not wait for it (a subscription may
wait on the broker), so a refresh it overtook finds the stores closed under it. That says
nothing; it was an unhandled exception in the thread (`sqlite3.ProgrammingError: Cannot
operate on a closed database`, seen in a CI run's warnings). Before the stop, a bug still ends
the thread, where `live` sees it."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import pytest

from consumers.worker import REFRESHER, DeletionWorker, WorkerSettings
from deletion.domain.topics import NamespaceName


class Stores:
    """What the refresher reads: namespaces, until the stores are closed under it."""

    def __init__(self, stopping_meanwhile: bool) -> None:
        self.closed = threading.Event()
        self.read_after_close = threading.Event()
        self.stopping_meanwhile = stopping_meanwhile
        self.worker: DeletionWorker | None = None

    def namespaces(self) -> list[NamespaceName]:
        if self.closed.is_set():
            if self.stopping_meanwhile and self.worker is not None:
                self.worker._stopping.set()  # `stop` began, and the stores were closed
            self.read_after_close.set()
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        return []


def worker(stores: Stores) -> DeletionWorker:
    settings = WorkerSettings(parallelism=1, refresh_interval_seconds=0.01, summary_seconds=60)
    handler: Any = None  # no namespace: nothing is ever handled
    client: Any = None
    stores.worker = DeletionWorker(client, handler, stores.namespaces, settings)
    return stores.worker


def join_refresher() -> None:
    for thread in threading.enumerate():
        if thread.name == REFRESHER:
            thread.join(10)


@pytest.fixture
def raised(monkeypatch: pytest.MonkeyPatch) -> list[BaseException | None]:
    """What ended a thread, as threading.excepthook is told it."""
    caught: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: caught.append(args.exc_value))
    return caught


def refreshed_after_close(stopping_meanwhile: bool) -> DeletionWorker:
    """A started worker whose refresher has read the stores closed under it, and ended."""
    stores = Stores(stopping_meanwhile)
    running = worker(stores)
    running.start()
    stores.closed.set()
    assert stores.read_after_close.wait(10)
    join_refresher()
    return running


def test_a_refresh_overtaken_by_the_stop_and_the_stores_closing_says_nothing(
    raised: list[BaseException | None],
) -> None:
    running = refreshed_after_close(stopping_meanwhile=True)
    assert raised == []
    running.stop(timeout=10)


def test_before_the_stop_a_refresh_bug_ends_the_refresher_and_live_says_so(
    raised: list[BaseException | None],
) -> None:
    running = refreshed_after_close(stopping_meanwhile=False)
    assert [type(exc) for exc in raised] == [sqlite3.ProgrammingError]
    assert running.live()[0] is False
    running.stop(timeout=10)
