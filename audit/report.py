"""What the operator reads: the summary table and the dangling-reference alarm."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Row
from rich.console import Console
from rich.table import Table
from rich.text import Text

from audit.schema import ORPHAN
from audit.units import human_bytes, utc_minute

MAX_LISTED = 20


def summary_table(rows: Sequence[Row]) -> Table:
    table = Table(
        "status",
        "namespace",
        "component",
        "ledgers",
        "bytes",
        "oldest (UTC)",
        title="unreferenced ledgers",
    )
    for row in rows:
        style = "bold" if row["status"] == ORPHAN else None
        table.add_row(
            row["status"],
            row["namespace"] or "-",
            row["component"] or "-",
            str(row["ledgers"]),
            human_bytes(row["bytes"]),
            utc_minute(row["oldest_ctime_ms"]),
            style=style,
        )
    return table


def print_report(console: Console, rows: Sequence[Row], dangling_ids: Sequence[int]) -> None:
    if rows:
        console.print(summary_table(rows))
    else:
        console.print("no unreferenced ledgers")
    if dangling_ids:
        listed = ", ".join(map(str, dangling_ids[:MAX_LISTED]))
        more = (
            f" and {len(dangling_ids) - MAX_LISTED} more" if len(dangling_ids) > MAX_LISTED else ""
        )
        console.print(
            Text.assemble(
                ("DANGLING:", "bold red"),
                f" {len(dangling_ids)} ledgers referenced by metadata do "
                f"not exist (possible data loss): {listed}{more}",
            )
        )
