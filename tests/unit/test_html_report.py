"""ReportData to HTML without a browser: escaping, self-containment, sections, the shipped
template. What a browser shows is tests/integration/test_html_chromium.py's part."""

from __future__ import annotations

import fnmatch
import re
from importlib import resources
from pathlib import Path

import pytest
import tomllib

from audit.report.page import (
    REPORT_FILE,
    Cell,
    CellKind,
    Column,
    Figure,
    ReportData,
    Section,
    format_cell,
    render,
    write_html,
)
from audit.units import human_bytes, human_duration, utc_minute

REPO = Path(__file__).resolve().parents[2]
NOW = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
HOSTILE = "t/ns/<script>alert('x')</script>&amp;"


def data(*sections: Section, figures: tuple[Figure, ...] = ()) -> ReportData:
    return ReportData(NOW, 86_400_000, figures, sections)


def table(rows: tuple[tuple[str | int | None, ...], ...], total: int | None = None) -> Section:
    columns = (Column("topic"), Column("size", "bytes"))
    return Section("listed", "Listed", "Why it matters.", columns, rows, total=total)


def test_values_are_escaped_wherever_they_appear() -> None:
    page = render(data(table(((HOSTILE, 1),)), figures=(Figure(HOSTILE, HOSTILE, "text"),)))
    assert "<script" not in page
    assert page.count("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;amp;") == 3


def test_the_page_is_self_contained() -> None:
    page = render(data(table((("a/b/c", 5),))))
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", page, re.IGNORECASE)
    assert not re.search(r"\b(src|href)=\"(?!#)", page), "only in-page links"
    assert "url(" not in page and "@import" not in page
    assert "default-src 'none'" in page  # the browser refuses scripts and remote content too


def test_an_empty_section_says_so_and_raises_no_alarm() -> None:
    empty = Section("dangling", "Missing", "Data loss.", (Column("ledger id"),), alarm=True)
    page = render(data(empty))
    assert 'class="empty">None found.</p>' in page
    assert "<table" not in page and 'class="raised"' not in page
    alarming = Section(
        "dangling", "Missing", "Data loss.", (Column("ledger id"),), ((7,),), alarm=True
    )
    assert 'class="raised"' in render(data(alarming))


def test_a_partial_listing_says_how_many_were_found() -> None:
    assert "Showing 1 of 1,234;" in render(data(table((("a/b/c", 5),), total=1234)))
    assert "Showing" not in render(data(table((("a/b/c", 5),), total=1)))


def test_sections_render_in_order_with_formatted_cells() -> None:
    first = table((("a/b/c", 3 * 1024 * 1024), ("a/b/d", None)))
    second = Section("ages", "Ages", "", (Column("age", "duration"), Column("n", "count")),
                     ((9 * 86_400_000 + 3_600_000, 1234567),))  # fmt: skip
    page = render(data(first, second))
    assert page.index('id="listed"') < page.index('id="ages"')
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    assert cells == ["a/b/c", "3.0 MiB", "a/b/d", "-", "9 d 1 h", "1,234,567"]


def test_a_row_that_does_not_fit_its_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        table((("a/b/c",),))


def test_figures_link_to_their_section_and_raise_alarms_only_when_not_zero() -> None:
    figures = (
        Figure("dangling", 0, alarm=True, section="dangling"),
        Figure("orphans", 3, section="orphans"),
        Figure("missing", 2, alarm=True),
    )
    page = render(data(figures=figures))
    assert page.count('class="figure raised"') == 1
    assert '<a href="#orphans">3</a>' in page


def test_cells_and_units() -> None:
    cases: list[tuple[Cell, CellKind]] = [(None, "count"), ("x", "bytes"), (5, "text")]
    assert [format_cell(value, kind) for value, kind in cases] == ["-", "x", "5"]
    assert [human_bytes(n) for n in (0, 1023, 1024, 5 * 2**40, None)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "5.0 TiB",
        "-",
    ]
    assert utc_minute(NOW) == "2023-11-14 22:13"
    hour, day = 3_600_000, 86_400_000
    durations = [0, 250, 45_000, hour, 3 * hour + 20 * 60_000, day, 12 * day + 3 * hour, -hour]
    assert [human_duration(ms) for ms in durations] == [
        "0 s", "250 ms", "45 s", "1 h", "3 h 20 m", "1 d", "12 d 3 h", "-1 h",
    ]  # fmt: skip


def test_write_html_replaces_the_page_whole(tmp_path: Path) -> None:
    (tmp_path / REPORT_FILE).write_text("old")
    page = write_html(tmp_path, data())
    assert page == tmp_path / REPORT_FILE and page.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == [REPORT_FILE]


def test_the_template_is_package_data_a_wheel_carries() -> None:
    template = resources.files("audit.report") / "templates" / "report.html.j2"
    assert template.is_file()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["audit.report"]
    assert any(fnmatch.fnmatch("templates/report.html.j2", p) for p in patterns)
