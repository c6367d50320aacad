"""Wall-clock time, as its own type.

Due times (a message's publish time plus its delay), snapshot times and ledger ages are
compared with each other, so they must all be wall-clock (epoch) seconds; a monotonic
reading mixed in makes every comparison meaningless. Cache lifetimes stay monotonic and
never meet these values.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NewType

EpochSeconds = NewType("EpochSeconds", float)
WallClock = Callable[[], EpochSeconds]


def wall_clock() -> EpochSeconds:
    return EpochSeconds(time.time())
