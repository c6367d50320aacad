"""Sizes, times and ages as an operator reads them, in the console report and the HTML page."""

from __future__ import annotations

from datetime import datetime, timezone

_MINUTE_MS = 60_000
_HOUR_MS = 60 * _MINUTE_MS
_DAY_MS = 24 * _HOUR_MS


def human_bytes(value: int | None) -> str:
    """Binary units, as BookKeeper's and Pulsar's own tools print sizes; `-` if unknown."""
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def utc_minute(epoch_ms: int | None) -> str:
    """`YYYY-MM-DD HH:MM` in UTC; `-` if unknown."""
    if epoch_ms is None:
        return "-"
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def human_duration(ms: int | None) -> str:
    """The two largest units, `12 d 3 h`, `3 h 20 m`, `45 s`; `-` if unknown."""
    if ms is None:
        return "-"
    if ms < 0:
        return f"-{human_duration(-ms)}"
    if ms < _MINUTE_MS:
        return f"{ms} ms" if 0 < ms < 1000 else f"{ms // 1000} s"
    days, rest = divmod(ms, _DAY_MS)
    hours, rest = divmod(rest, _HOUR_MS)
    parts = [(days, "d"), (hours, "h"), (rest // _MINUTE_MS, "m")]
    while parts[0][0] == 0:
        parts.pop(0)
    shown = parts[:2] if len(parts) > 1 and parts[1][0] else parts[:1]
    return " ".join(f"{n} {unit}" for n, unit in shown)


def count(value: int) -> str:
    """`71,487`: thousands separated, as the report's tables print counts."""
    return f"{value:,}"


def plural(value: int, noun: str, nouns: str | None = None) -> str:
    """`1 ledger`, `71,487 ledgers`, `2 copies` (given `nouns`)."""
    return f"{value:,} {noun if value == 1 else (nouns or noun + 's')}"
