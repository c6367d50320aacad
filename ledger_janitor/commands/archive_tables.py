"""What `archive list` and `archive drain` print for people: their tables and summaries.

A drain's outcomes are said in words, and a dry run's always with "would": it changed
nothing, so no line of it may read as if it had (`drained ...`, `already_gone`).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from rich.table import Table

from consumers.archive import ArchivedMessage
from consumers.archive_listing import ArchivedLedger
from deletion.domain.outcome import Outcome
from ledger_janitor.commands.console import count, one_line, plural, whole

Settled = list[tuple[ArchivedMessage, Outcome, str]]

_DONE = {
    Outcome.DELETED: "deleted",
    Outcome.ALREADY_GONE: "already gone",
    Outcome.REQUEUED: "requeued",
    Outcome.REARCHIVED: "archived again",
}
_WOULD = {
    Outcome.WOULD_DELETE: "would delete",
    # Nothing to delete: a drain would take the message out of the archive.
    Outcome.ALREADY_GONE: "would drop (already gone)",
    Outcome.WOULD_REQUEUE: "would requeue",
    Outcome.WOULD_REARCHIVE: "would archive again",
}


def _when(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S") if ms else "-"


def archived_table(rows: list[ArchivedLedger], title: str) -> Table:
    """A row a ledger: how many times it was archived, the first try of all, and the newest
    archiving's attempts, time and reason."""
    table = Table(
        *whole("namespace", "ledger", "component", "topic"),
        "archived",
        "attempts",
        "first try",
        "last try",
        *whole("reason"),
        title=title,
    )
    for row in rows:
        latest, info = row.latest, row.latest.info
        table.add_row(
            str(latest.namespace),
            str(info.ledger_id) if info else "?",
            info.ledger_component.value if info else "?",
            str(info.topic_name) if info else "(undecodable)",
            f"{row.archivings}x",
            str(latest.attempts),
            _when(row.first_try_ms),
            _when(latest.last_try_ms),
            one_line(latest.reason),
        )
    return table


def outcome_words(outcome: Outcome, dry_run: bool) -> str:
    return (_WOULD if dry_run else _DONE).get(outcome, outcome.value)


def drained_table(settled: Settled, title: str, dry_run: bool) -> Table:
    table = Table(*whole("namespace", "ledger", "topic", "outcome", "why"), title=title)
    for archived, outcome, why in settled:
        info = archived.info
        table.add_row(
            str(archived.namespace),
            str(info.ledger_id) if info else "?",
            str(info.topic_name) if info else "(undecodable)",
            outcome_words(outcome, dry_run),
            one_line(why),
        )
    return table


def drain_summary(settled: Settled, named: str, dry_run: bool) -> str:
    """`drained 3 messages in a/b: 1 deleted, ...`, or for a dry run `would drain ... (dry
    run: nothing changed): 1 would delete, ...`; outcomes in one fixed order."""
    counts = Counter(outcome for _, outcome, _ in settled)
    order = [*(_WOULD if dry_run else _DONE), *Outcome]
    totals = ", ".join(
        f"{count(counts[o])} {outcome_words(o, dry_run)}" for o in dict.fromkeys(order) if counts[o]
    )
    messages = plural(len(settled), "message")
    if dry_run:
        return f"would drain {messages} in {named} (dry run: nothing changed): {totals}"
    return f"drained {messages} in {named}: {totals}"
