"""Private services for the tests that restart them: the session's are shared by every test."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger_janitor import logs
from ledger_janitor.embedded import EmbeddedBroker

from ..harness.zookeeper import ZooKeeperServer


@pytest.fixture
def private_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    broker = EmbeddedBroker(tmp_path / "private-broker", partitions=4).start()
    yield broker
    broker.stop()


@pytest.fixture
def private_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path / "private-zookeeper").start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def quiet_logs() -> None:
    """Warnings only in this process: phase one logs every message it enqueues at INFO."""
    logs.configure(logging.WARNING)
