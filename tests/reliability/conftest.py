"""Private services for the tests that restart them: the session's are shared by every test."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from ledger_janitor import logs
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.sandbox import Sandbox
from tests.reliability.support import kill_leftovers


@pytest.fixture
def private_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    broker = EmbeddedBroker(tmp_path / "private-broker", partitions=4).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """Decodes each input in a fresh process and reports its memory (sandbox.py)."""
    with Sandbox() as worker:
        yield worker


@pytest.fixture(autouse=True)
def quiet_logs() -> Iterator[None]:
    """Warnings only in this process (phase one logs every message it enqueues at INFO);
    then the logging of whoever runs next is put back as it was."""
    root = logging.getLogger()
    handlers, level, config = list(root.handlers), root.level, structlog.get_config()
    logs.configure(logging.WARNING)
    yield
    root.handlers = handlers
    root.setLevel(level)
    structlog.configure(**config)


@pytest.fixture(autouse=True)
def no_leftover_workers() -> Iterator[None]:
    yield
    kill_leftovers()
