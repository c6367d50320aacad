"""The audit's HTML report as a browser shows it: headless Chromium opens the page, and the
tests read the DOM it built (harness/dom.py), its screenshot's pixels and its PDF.

Chromium runs with JavaScript on: had a hostile topic name slipped through unescaped, its
script would be in the DOM (and would have run). Every run must leave no process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from audit.report.chart import BAR_COLOUR, bar_chart
from audit.report.page import Column, Figure, ReportData, Section, write_html
from audit.units import human_bytes
from harness.chromium import ChromiumError, dump_dom, print_to_pdf, run_chromium, screenshot
from harness.dom import RenderedPage, read_dom
from harness.leaks import group_members
from harness.process import wait_until

NOW = 1_700_000_000_000  # 2023-11-14 22:13 UTC
DAY = 86_400_000
ALARM_RED = (0xB3, 0x26, 0x1E)  # the template's --alarm colour
SCRIPT_TOPIC = "t/ns/<script>document.title='pwned';document.body.dataset.pwned=1</script>"
IMG_TOPIC = "t/ns/<img src=x onerror=\"document.title='pwned'\">"


def report(dangling: tuple[tuple[int, str, str], ...]) -> ReportData:
    orphans = Section(
        "oldest-orphans",
        "The oldest orphans",
        "Old and unreferenced.",
        (Column("ledger id"), Column("topic"), Column("age", "duration"), Column("size", "bytes")),
        ((11, SCRIPT_TOPIC, 30 * DAY, 4096), (12, "t/ns/orders", 9 * DAY + 7_200_000, None)),
        total=2,
    )
    missing = Section(
        "dangling",
        "Missing data",
        "Referenced, yet gone.",
        (Column("ledger id"), Column("topic"), Column("component")),
        dangling,
        empty="None: every referenced ledger exists.",
        alarm=True,
    )
    figures = (
        Figure("ledgers", 1_234_567),
        Figure("orphans", 2, section="oldest-orphans"),
        Figure("dangling references", len(dangling), alarm=True, section="dangling"),
    )
    return ReportData(NOW, DAY, figures, (orphans, missing))


def rendered(tmp_path: Path, data: ReportData) -> RenderedPage:
    run = dump_dom(write_html(tmp_path, data))
    assert run.survivors == []
    return read_dom(run.stdout)


def test_chromium_shows_the_figures_and_rows(tmp_path: Path) -> None:
    page = rendered(tmp_path, report(((999, IMG_TOPIC, "MANAGED_LEDGER"),)))
    assert page.title == "Orphan ledger audit, 2023-11-14 22:13 UTC"
    assert page.figures == {"ledgers": "1,234,567", "orphans": "2", "dangling references": "1"}
    assert "grace period 1 d" in page.text
    assert page.headers["oldest-orphans"] == ["ledger id", "topic", "age", "size"]
    assert page.tables["oldest-orphans"] == [
        ["11", SCRIPT_TOPIC, "30 d", "4.0 KiB"],
        ["12", "t/ns/orders", "9 d 2 h", "-"],
    ]
    assert page.tables["dangling"] == [["999", IMG_TOPIC, "MANAGED_LEDGER"]]


def test_hostile_names_render_as_text_and_nothing_runs(tmp_path: Path) -> None:
    page = rendered(tmp_path, report(((999, IMG_TOPIC, "MANAGED_LEDGER"),)))
    assert SCRIPT_TOPIC in page.text and IMG_TOPIC in page.text
    assert page.elements["script"] == 0 and page.elements["img"] == 0
    assert page.handlers == []
    assert "pwned" not in page.title


def test_an_empty_section_shows_its_placeholder(tmp_path: Path) -> None:
    page = rendered(tmp_path, report(()))
    assert page.sections["dangling"] == (
        "Missing data Referenced, yet gone. None: every referenced ledger exists."
    )
    assert "dangling" not in page.tables and page.figures["dangling references"] == "0"


def test_the_page_paints_its_alarm_only_when_data_is_missing(tmp_path: Path) -> None:
    """Pixels prove the inline CSS applies (the page's own CSP lets it) and the alarm shows."""
    painted = {}
    for name, dangling in (("alarm", ((999, "t/ns/lost", "MANAGED_LEDGER"),)), ("calm", ())):
        png = tmp_path / f"{name}.png"
        run = screenshot(write_html(tmp_path / name, report(dangling)), png, 1000, 1200)
        assert run.survivors == []
        with Image.open(png) as image:
            assert image.size == (1000, 1200)
            colours = {rgb: n for n, rgb in image.convert("RGB").getcolors(maxcolors=1 << 24) or []}
        painted[name] = (colours.get(ALARM_RED, 0), len(colours))
    (alarm_red, alarm_colours), (calm_red, calm_colours) = painted["alarm"], painted["calm"]
    assert alarm_red > 500 and calm_red == 0, painted  # borders and the figure, in red
    assert alarm_colours > 20 and calm_colours > 20, painted  # text, bands: not a blank page


def test_the_page_prints(tmp_path: Path) -> None:
    pdf = tmp_path / "report.pdf"
    run = print_to_pdf(write_html(tmp_path, report(())), pdf)
    assert run.survivors == []
    content = pdf.read_bytes()
    assert content.startswith(b"%PDF-") and content.count(b"/Type /Page") >= 1


def test_a_process_group_is_found_though_its_members_hide_their_environment() -> None:
    """What the Chromium runs rely on to find their leftovers (harness/leaks.py)."""
    shell = subprocess.Popen(
        ["sh", "-c", "exec env -i sleep 60 & exec sleep 60"], start_new_session=True
    )
    try:
        wait_until(lambda: len(group_members(shell.pid)) == 2, 10, "two sleeps in the group")
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()
    wait_until(lambda: group_members(shell.pid) == [], 10, "the group to be gone")


def test_a_page_that_never_loads_is_killed_with_every_chromium_process(tmp_path: Path) -> None:
    hanging = tmp_path / "hanging.html"
    hanging.write_text("<!DOCTYPE html><title>busy</title><script>for (;;) {}</script>")
    with pytest.raises(ChromiumError, match="did not finish") as caught:
        run_chromium(hanging, "--dump-dom", timeout=5)
    assert caught.value.run is not None and caught.value.run.survivors == []


def charted() -> ReportData:
    """A page with both charts the audit draws: bytes per namespace, orphans by age."""
    namespaces = [(f"t/ns{i}", (i + 1) * 1024**2) for i in range(12)]
    by_bytes = Section(
        "reclaimable",
        "Bytes reclaimable per namespace",
        "The most first.",
        (Column("namespace"), Column("bytes", "bytes")),
        tuple(namespaces),
        chart=bar_chart("Bytes reclaimable per namespace", namespaces, human_bytes),
    )
    ages = [("1 d to 7 d", 0), ("7 d to 30 d", 71_487), ("over 30 d", 3)]
    by_age = Section(
        "orphan-ages",
        "Orphans by age",
        "Buckets.",
        (Column("age"), Column("orphans", "count")),
        tuple(ages),
        chart=bar_chart("Orphans by age", ages, "{:,}".format),
    )
    return ReportData(NOW, DAY, (Figure("orphans", 71_490),), (by_bytes, by_age))


def test_the_charts_render_as_svg_without_console_errors(tmp_path: Path) -> None:
    """The charts are in the DOM, painted (their bars' colour on screen), and the page logs
    nothing to the console: no CSP violation, no error."""
    page_file = write_html(tmp_path, charted())
    run = dump_dom(page_file, "--enable-logging=stderr", "--v=0")
    assert run.survivors == []
    assert [line for line in run.stderr.splitlines() if ":CONSOLE" in line] == []
    page = read_dom(run.stdout)
    assert page.elements["svg"] == 2 and page.elements["script"] == 0
    assert page.elements["rect"] == 12 + 3
    assert "t/ns11 12.0 MiB" in page.sections["reclaimable"]  # the longest bar, labelled
    assert "7 d to 30 d 71,487" in page.sections["orphan-ages"]
    png = tmp_path / "charts.png"
    assert screenshot(page_file, png, 1000, 1400).survivors == []
    with Image.open(png) as image:
        colours = {rgb: n for n, rgb in image.convert("RGB").getcolors(maxcolors=1 << 24) or []}
    bar = tuple(int(BAR_COLOUR[i : i + 2], 16) for i in (1, 3, 5))
    # 12 + 2 visible bars 20 px high, the longest 370 px wide: thousands of pixels.
    assert colours.get(bar, 0) > 20_000, colours.get(bar)
