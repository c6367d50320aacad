"""What the operator reads: the summary table and the missing-data alarm (one block)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Row
from rich.console import Console
from rich.table import Table
from rich.text import Text

from audit.schema import (
    FOREIGN,
    MISSING_BOOKKEEPER,
    MISSING_OFFLOADED,
    ORPHAN,
    UNATTRIBUTABLE,
    UNKNOWN,
    YOUNG,
)
from audit.units import count, human_bytes, plural, utc_minute

MAX_LISTED = 20


# What an operator acts on first: the orphans (what `--enqueue` reclaims), then what may
# become one, then what only a broker can tell, then what the tool will not touch.
_STATUS_ORDER = {ORPHAN: 0, YOUNG: 1, UNKNOWN: 2, UNATTRIBUTABLE: 3, FOREIGN: 4}


def _ordered(rows: Sequence[Row]) -> list[Row]:
    """By status as above, then the largest first (bytes, then ledgers), then by name."""
    return sorted(
        rows,
        key=lambda row: (
            _STATUS_ORDER.get(row["status"], len(_STATUS_ORDER)),
            -(row["bytes"] or 0),
            -(row["ledgers"] or 0),
            row["namespace"] or "~",
            row["component"] or "~",
        ),
    )


def summary_table(rows: Sequence[Row]) -> Table:
    table = Table(
        "status",
        "namespace",
        "component",
        "ledgers",
        "bytes",
        "oldest (UTC)",
        title="ledgers Pulsar's metadata does not reference",
    )
    for row in _ordered(rows):
        style = "bold" if row["status"] == ORPHAN else None
        table.add_row(
            row["status"],
            row["namespace"] or "-",
            row["component"] or "-",
            count(row["ledgers"]),
            human_bytes(row["bytes"]),
            utc_minute(row["oldest_ctime_ms"]),
            style=style,
        )
    table.add_section()
    oldest = [row["oldest_ctime_ms"] for row in rows if row["oldest_ctime_ms"] is not None]
    sizes = [row["bytes"] for row in rows if row["bytes"] is not None]
    table.add_row(
        "total",
        "",
        "",
        count(sum(row["ledgers"] or 0 for row in rows)),
        human_bytes(sum(sizes)) if sizes else "-",
        utc_minute(min(oldest)) if oldest else "-",
        style="bold",
    )
    return table


def print_report(console: Console, rows: Sequence[Row]) -> None:
    if rows:
        console.print(summary_table(rows))
    else:
        console.print("no unreferenced ledgers")


def _missing_line(ledger_id: int, rows: Sequence[Row]) -> str:
    """One lost ledger, on one line however many rows name it (unwrapped: UUIDs and topics
    are copied whole): `  bookkeeper: ledger 7 of a/b/t (MANAGED_LEDGER), 3 entries, 1.0 KiB`."""
    whats, parts = [], []
    for row in rows:
        what = f"offload {row['offload_uuid']}" if row["offload_uuid"] else row["component"] or "-"
        if row["entries"] is None and row["size"] is None:
            recorded = "entries and size unknown"
        else:
            entries = (
                "entries unknown"
                if row["entries"] is None
                else plural(row["entries"], "entry", "entries")
            )
            size = "size unknown" if row["size"] is None else human_bytes(row["size"])
            recorded = f"{entries}, {size}"
        whats.append(row["what"])
        parts.append(f"{row['topic'] or '-'} ({what}), {recorded}")
    gone = " and ".join(dict.fromkeys(whats))
    return f"  {gone}: ledger {ledger_id} of " + "; ".join(dict.fromkeys(parts))


_GONE = {MISSING_BOOKKEEPER: "no BookKeeper ledger", MISSING_OFFLOADED: "offloaded copy gone"}


def missing_ledgers(rows: Sequence[Row]) -> dict[int, list[Row]]:
    """The missing-data report's rows by ledger: a ledger is listed once."""
    by_ledger: dict[int, list[Row]] = {}
    for row in rows:
        by_ledger.setdefault(int(row["ledger_id"]), []).append(row)
    return by_ledger


def print_missing(console: Console, rows: Sequence[Row]) -> None:
    """The one data-loss block: dangling references (no BookKeeper ledger) and offloaded copies
    gone from tiered storage, each ledger once."""
    by_ledger = missing_ledgers(rows)
    if not by_ledger:
        console.print("missing data: none")
        return
    kinds = {k: len({r["ledger_id"] for r in rows if r["what"] == k}) for k in _GONE}
    why = ", ".join(
        plural(kinds[MISSING_BOOKKEEPER], "dangling reference") + " (no BookKeeper ledger)"
        if kind == MISSING_BOOKKEEPER
        else plural(kinds[MISSING_OFFLOADED], "offloaded copy", "offloaded copies")
        + " gone from tiered storage"
        for kind in _GONE
        if kinds[kind]
    )
    verb = "is" if len(by_ledger) == 1 else "are"
    console.print(
        Text.assemble(
            ("MISSING DATA:", "bold red"),
            f" {plural(len(by_ledger), 'ledger')} referenced by metadata {verb} gone from storage"
            f" (possible data loss; never enqueued): {why}",
        ),
        soft_wrap=True,
    )
    for ledger_id in list(by_ledger)[:MAX_LISTED]:
        console.print(_missing_line(ledger_id, by_ledger[ledger_id]), soft_wrap=True)
    if len(by_ledger) > MAX_LISTED:
        console.print(
            f"  and {count(len(by_ledger) - MAX_LISTED)} more (missing/ in the Parquet report)"
        )
