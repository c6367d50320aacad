"""The audit's report as one self-contained HTML page, `DIR/report.html`, beside the Parquet.

The page is plain data rendered by a Jinja template (`templates/report.html.j2`, shipped as
package data) with autoescaping on: topic names come from the cluster and may hold markup.
It needs no network, no JavaScript and no other file; a Content-Security-Policy forbids
scripts and remote content besides, should a value ever slip through unescaped.

Everything the page shows is a `ReportData`: headline `Figure`s and a list of `Section`s,
each a titled table whose cells the template formats by the column's `kind`, and optionally
a bar chart (`audit.report.chart`) drawn as inline SVG: no script, so the CSP stays. A new finding
(offloaded orphans, missing offloaded data) is one more `Section`; the renderer stays as it
is. `audit.report.data` builds the `ReportData` from the Spark results. No PySpark here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import jinja2

from audit.report.chart import BarChart
from audit.units import human_bytes, human_duration, utc_minute

REPORT_FILE = "report.html"

# How a cell is shown: `text` as it is, `count` with thousands separators, `bytes` in binary
# units, `time` as a UTC minute, `duration` (an age, a grace period) in its two largest units.
CellKind = Literal["text", "count", "bytes", "time", "duration"]
Cell = str | int | None

_FORMATS: dict[str, Callable[[int], str]] = {
    "count": "{:,}".format,
    "bytes": human_bytes,
    "time": utc_minute,
    "duration": human_duration,
}


@dataclass(frozen=True)
class Column:
    title: str
    kind: CellKind = "text"

    @property
    def numeric(self) -> bool:
        """Right-aligned, so that magnitudes line up."""
        return self.kind != "text"


@dataclass(frozen=True)
class Section:
    """A titled table; an empty one says `empty` instead, so that "none" is visibly checked."""

    key: str  # the HTML id, for links from the headline
    title: str
    explanation: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...] = ()
    total: int | None = None  # how many were found, when more than `rows` lists
    empty: str = "None found."
    alarm: bool = False  # rows here mean possible data loss: drawn in red
    chart: BarChart | None = None  # drawn above the table, as inline SVG

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"section {self.key}: row {row!r} does not fit its columns")

    @property
    def found(self) -> int:
        return len(self.rows) if self.total is None else self.total


@dataclass(frozen=True)
class Figure:
    label: str
    value: Cell
    kind: CellKind = "count"
    alarm: bool = False  # a value other than zero needs attention
    section: str | None = None  # the key of the section that lists it

    @property
    def raised(self) -> bool:
        return self.alarm and bool(self.value)


@dataclass(frozen=True)
class ReportData:
    now_ms: int
    min_age_ms: int
    figures: tuple[Figure, ...]
    sections: tuple[Section, ...]
    title: str = "Orphan ledger audit"


def format_cell(value: Cell, kind: CellKind = "text") -> str:
    if value is None:
        return "-"
    if kind == "text" or isinstance(value, str):
        return str(value)
    return _FORMATS[kind](value)


@functools.cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("audit.report", "templates"),
        autoescape=True,  # every value, whatever the file name says
        undefined=jinja2.StrictUndefined,  # a misspelt field fails, never renders blank
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["cell"] = format_cell
    return environment


def render(data: ReportData) -> str:
    return _environment().get_template("report.html.j2").render(data=data)


def write_html(output: Path, data: ReportData) -> Path:
    """`output/report.html`, written whole (a reader never sees half a page)."""
    output.mkdir(parents=True, exist_ok=True)
    page = output / REPORT_FILE
    partial = output / f".{REPORT_FILE}.partial"
    partial.write_text(render(data), encoding="utf-8")
    partial.replace(page)
    return page
