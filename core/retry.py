"""Retrying transient failures (connection loss, time-outs) as a small policy object.

This is distinct from reconsume-later: a transient retry happens within one handling of a
message, in milliseconds; reconsume-later hands the message back for minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from core.errors import (
    TransientBrokerError,
    TransientLedgerStorageError,
    TransientMetadataError,
)

T = TypeVar("T")

TRANSIENT_ERRORS = (TransientMetadataError, TransientLedgerStorageError, TransientBrokerError)


@dataclass(frozen=True)
class TransientRetry:
    attempts: int = 5
    initial_wait: float = 0.05
    max_wait: float = 2.0
    sleep: Callable[[float], None] = time.sleep

    def call(self, operation: Callable[[], T]) -> T:
        """Run `operation`, retrying transient errors; the last error propagates unchanged."""
        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.initial_wait, max=self.max_wait),
            retry=retry_if_exception_type(TRANSIENT_ERRORS),
            sleep=self.sleep,
            reraise=True,
        )
        return retrying(operation)
