"""Wall-clock and monotonic time, as two types that do not mix.

Due times (a message's publish time plus its delay), snapshot times, ledger ages and the
cursor's `lastActive` are compared with each other or written where Pulsar reads epoch time,
so they must all be wall-clock (epoch) seconds. Cache lifetimes are measured on the
monotonic clock, which no clock adjustment moves, and never meet those values. A value of
one kind where the other is expected is a type error; converting on purpose takes an
explicit `EpochSeconds(...)` or `MonotonicSeconds(...)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NewType

EpochSeconds = NewType("EpochSeconds", float)
WallClock = Callable[[], EpochSeconds]

MonotonicSeconds = NewType("MonotonicSeconds", float)
MonotonicClock = Callable[[], MonotonicSeconds]


def wall_clock() -> EpochSeconds:
    return EpochSeconds(time.time())


def monotonic_clock() -> MonotonicSeconds:
    return MonotonicSeconds(time.monotonic())
