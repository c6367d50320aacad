"""What the operator reads about tiered storage, and the missing-data alarm."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Row
from rich.console import Console
from rich.table import Table
from rich.text import Text

from audit.offload_audit import TieredAudit
from audit.report import MAX_LISTED
from audit.schema import ORPHAN
from audit.units import human_bytes, utc_minute


def offloaded_table(rows: Sequence[Row]) -> Table:
    table = Table(
        "status", "store", "namespace", "copies", "bytes", "oldest (UTC)",
        title="unreferenced offloaded ledgers",
    )  # fmt: skip
    for row in rows:
        table.add_row(
            row["status"],
            row["store"],
            row["namespace"] or "-",
            str(row["copies"]),
            human_bytes(row["bytes"]),
            utc_minute(row["oldest_mtime_ms"]),
            style="bold" if row["status"] == ORPHAN else None,
        )
    return table


def missing_line(row: Row) -> str:
    """One lost ledger, on a line of its own (unwrapped: UUIDs and topics are copied whole)."""
    what = "offload " + str(row["offload_uuid"]) if row["offload_uuid"] else row["component"]
    entries = "entries unknown" if row["entries"] is None else f"{row['entries']} entries"
    return (
        f"  {row['what']}: ledger {row['ledger_id']} of {row['topic'] or '-'} ({what}),"
        f" {entries}, {human_bytes(row['size'])}"
    )


def print_tiered(console: Console, tiered: TieredAudit) -> None:
    if tiered.storage is None:
        why = f"skipped, {tiered.skipped}" if tiered.skipped else "not configured"
        console.print(f"tiered storage: {why}", soft_wrap=True)
    else:
        console.print(
            f"tiered storage: {tiered.storage}: {tiered.copies} offloaded ledger copies,"
            f" {tiered.referenced} referenced",
            soft_wrap=True,
        )
        if tiered.summary:
            console.print(offloaded_table(tiered.summary))
        else:
            console.print("no unreferenced offloaded ledgers")
    rows = tiered.missing_rows
    if not rows:
        console.print("missing data: none")
        return
    console.print(
        Text.assemble(
            ("MISSING DATA:", "bold red"),
            f" {len(rows)} ledgers referenced by metadata are gone from storage"
            " (possible data loss; never enqueued):",
        ),
        soft_wrap=True,
    )
    for row in rows[:MAX_LISTED]:
        console.print(missing_line(row), soft_wrap=True)
    if len(rows) > MAX_LISTED:
        console.print(f"  and {len(rows) - MAX_LISTED} more (missing/ in the Parquet report)")
