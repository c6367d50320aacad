"""What the operator reads about tiered storage (the missing-data alarm: `audit.report.console`)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Row
from rich.console import Console
from rich.table import Table

from audit.offload.tiered import TieredAudit
from audit.schema import ORPHAN
from audit.units import count, human_bytes, plural, utc_minute


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
            count(row["copies"]),
            human_bytes(row["bytes"]),
            utc_minute(row["oldest_mtime_ms"]),
            style="bold" if row["status"] == ORPHAN else None,
        )
    return table


def print_tiered(console: Console, tiered: TieredAudit) -> None:
    if tiered.storage is None:
        why = f"skipped, {tiered.skipped}" if tiered.skipped else "not configured"
        console.print(f"tiered storage: {why}", soft_wrap=True)
    else:
        console.print(
            f"tiered storage: {tiered.storage}:"
            f" {plural(tiered.copies, 'offloaded ledger copy', 'offloaded ledger copies')},"
            f" {count(tiered.referenced)} referenced",
            soft_wrap=True,
        )
        if tiered.summary:
            console.print(offloaded_table(tiered.summary))
        else:
            console.print("no unreferenced offloaded ledgers")
