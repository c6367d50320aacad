"""Message properties: the Java client's retry/dead-letter names, and ours for the archive."""

from __future__ import annotations

from collections.abc import Mapping

# RetryMessageUtil's names; the Java client reads and writes exactly these
# (pulsar-client/src/main/java/org/apache/pulsar/client/util/RetryMessageUtil.java).
RECONSUME_TIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"
REAL_TOPIC = "REAL_TOPIC"
# The subscription a retry was made for: the real 4.0 Java client writes it on its first
# reconsume beside REAL_TOPIC (seen on the real broker, tests/real_pulsar/test_java_clients.py).
REAL_SUBSCRIPTION = "REAL_SUBSCRIPTION"
# SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID: Java's own spelling, which every Java client sets.
ORIGIN_MESSAGE_ID_Y_TIME = "ORIGIN_MESSAGE_IDY_TIME"
# PROPERTY_ORIGIN_MESSAGE_ID, which newer Java clients set beside it.
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"

# Ours: why and when a message was archived, when it was first tried, and how often an
# admin's drain has looked at it since.
ARCHIVE_REASON = "ARCHIVE_REASON"
ARCHIVE_TIME = "ARCHIVE_TIME"
FIRST_ATTEMPT_TIME = "FIRST_ATTEMPT_TIME"
DRAIN_ATTEMPTS = "DRAIN_ATTEMPTS"


def reconsume_times(properties: Mapping[str, str]) -> int:
    """How often the message was reconsumed; a garbled count counts as the maximum seen."""
    text = properties.get(RECONSUME_TIMES)
    if text is None:
        return 0
    try:
        return max(0, int(text))
    except ValueError:
        return 2**31 - 1


def int_property(properties: Mapping[str, str], name: str) -> int | None:
    try:
        return int(properties[name])
    except (KeyError, ValueError):
        return None


def delay_ms(properties: Mapping[str, str]) -> int | None:
    delay = int_property(properties, DELAY_TIME)
    return None if delay is None else max(0, delay)
