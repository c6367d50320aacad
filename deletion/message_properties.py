"""Message properties: the Java client's retry/dead-letter names, and ours for the archive."""

from __future__ import annotations

from collections.abc import Mapping

# RetryMessageUtil's names; the Java client reads and writes exactly these.
RECONSUME_TIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"
REAL_TOPIC = "REAL_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"

# Ours: why and when a message was archived.
ARCHIVE_REASON = "ARCHIVE_REASON"
ARCHIVE_TIME = "ARCHIVE_TIME"


def reconsume_times(properties: Mapping[str, str]) -> int:
    """How often the message was reconsumed; a garbled count counts as the maximum seen."""
    text = properties.get(RECONSUME_TIMES)
    if text is None:
        return 0
    try:
        return max(0, int(text))
    except ValueError:
        return 2**31 - 1


def delay_ms(properties: Mapping[str, str]) -> int | None:
    text = properties.get(DELAY_TIME)
    if text is None:
        return None
    try:
        return max(0, int(text))
    except ValueError:
        return None
