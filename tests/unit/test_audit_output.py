"""The audit's output as pure logic: plurals and separators, the line a malformed JSON input
is refused with, the SVG bar geometry, the summary's order, the one missing-data block and the
Prometheus gauges. The CLI runs are tests/integration/audit/test_operator_output.py's."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import Row
from rich.console import Console

from audit.report.chart import bar_chart
from audit.report.console import print_missing
from audit.report.metrics import audit_registry, write_metrics
from audit.report.orphans import age_buckets
from audit.report.summary import reclaimable_section, summary_section
from audit.scan.json_lines import first_bad_line, line_problem
from audit.schema import INVENTORY_SCHEMA
from audit.units import plural

DAY = 86_400_000
QUOTES = "Expecting property name enclosed in double quotes"


def test_plurals_and_thousands_separators() -> None:
    assert plural(1, "orphan") == "1 orphan"
    assert plural(71_487, "orphan") == "71,487 orphans"
    assert plural(0, "entry", "entries") == "0 entries"
    assert plural(1, "offloaded copy", "offloaded copies") == "1 offloaded copy"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"ledger_id": 1, "ctime_ms": 5}', None),
        ('{"ledger_id": 1, "ctime_ms": null, "custom_metadata": null}', None),
        (
            '{"ledger_id": 1, x}',
            f"not valid JSON ({QUOTES} at column 18)",
        ),
        ("[1, 2]", "not a JSON object but [1, 2]"),
        ('{"ctime_ms": 5}', "no ledger_id"),
        ('{"ledger_id": "one"}', 'ledger_id is "one", not a whole number'),
        ('{"ledger_id": 1.5}', "ledger_id is 1.5, not a whole number"),
        ('{"ledger_id": 1, "custom_metadata": []}', "custom_metadata is [], not an object"),
        ('{"ledger_id": -4}', "ledger_id -4 is negative"),
    ],
)
def test_a_line_is_refused_with_the_reason(line: str, problem: str | None) -> None:
    assert line_problem(line, INVENTORY_SCHEMA, ("ledger_id",)) == problem


def test_the_first_bad_line_is_numbered_past_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "inventory.jsonl"
    path.write_text('{"ledger_id": 1}\n\n{"ledger_id": true}\n{oops\n')
    assert first_bad_line(path, INVENTORY_SCHEMA, ("ledger_id",)) == (
        "inventory.jsonl line 3: ledger_id is true, not a whole number"
    )


def test_bars_are_proportional_and_a_small_one_stays_visible() -> None:
    chart = bar_chart("bytes", [("big", 1000), ("tiny", 1), ("none", 0)], str)
    assert chart is not None
    widths = [bar.width for bar in chart.bars]
    assert widths == [chart.plot_width, 2.0, 0.0]
    assert [bar.y for bar in chart.bars] == [6, 32, 58] and chart.height == 84
    assert bar_chart("empty", [("a", 0)], str) is None
    long = bar_chart("cut", [("t/" + "n" * 40, 5)], str)
    assert long is not None and long.bars[0].label == "t/" + "n" * 29 + "…"


def test_age_buckets_start_at_the_grace_period() -> None:
    assert [label for label, _ in age_buckets(DAY)] == [
        "1 d to 7 d", "7 d to 30 d", "30 d to 90 d", "90 d to 365 d", "over 365 d",
    ]  # fmt: skip
    assert age_buckets(40 * DAY)[0] == ("40 d to 90 d", 40 * DAY)


def summary_row(status: str, namespace: str | None, ledgers: int, size: int | None) -> Row:
    return Row(status=status, namespace=namespace, component="MANAGED_LEDGER", ledgers=ledgers,
               bytes=size, ledgers_with_size=ledgers if size else 0, oldest_ctime_ms=1)  # fmt: skip


def test_the_summary_lists_the_most_bytes_first_and_young_ones_last_and_summed() -> None:
    rows = [summary_row("young", "ns1", 5, 10), summary_row("orphan", "ns10", 1, 5),
            summary_row("orphan", "ns5", 1, 500), summary_row("foreign", None, 3, None),
            Row(**{**summary_row("young", "ns1", 2, None).asDict(), "component": "SCHEMA"}),
            summary_row("orphan", "ns15", 9, None)]  # fmt: skip
    section = summary_section(rows)
    assert [(r[0], r[1], r[2], r[3]) for r in section.rows] == [
        ("orphan", "ns5", "MANAGED_LEDGER", 1),
        ("orphan", "ns10", "MANAGED_LEDGER", 1),
        ("orphan", "ns15", "MANAGED_LEDGER", 9),
        ("foreign", None, "MANAGED_LEDGER", 3),
        ("young", "ns1", "2 components", 7),
    ]
    many = [summary_row("orphan", f"ns{i}", 1, i) for i in range(50)]
    capped = summary_section(many)
    assert len(capped.rows) == 40 and capped.found == 50 and capped.rows[0][1] == "ns49"
    chart = reclaimable_section(many).chart
    assert chart is not None and chart.bars[0].label == "ns49"
    assert chart.bars[-1].label == "35 more namespaces"


def missing(what: str, ledger_id: int, topic: str, **extra: Any) -> dict[str, Any]:
    return {"what": what, "ledger_id": ledger_id, "topic": topic, "component": "MANAGED_LEDGER",
            "offload_uuid": None, "entries": None, "size": None, **extra}  # fmt: skip


def test_the_missing_data_block_lists_each_ledger_once() -> None:
    offloaded = {"offload_uuid": "u-1", "entries": 3, "size": 2048}
    rows = [missing("bookkeeper", 7, "a/b/t"), missing("bookkeeper", 7, "a/b/u", entries=1),
            missing("tiered storage", 9, "a/b/t", **offloaded)]  # fmt: skip
    out = StringIO()
    print_missing(Console(file=out, width=80), rows)  # type: ignore[arg-type]
    assert out.getvalue().splitlines() == [
        "MISSING DATA: 2 ledgers referenced by metadata are gone from storage (possible data"
        " loss; never enqueued): 1 dangling reference (no BookKeeper ledger), 1 offloaded copy"
        " gone from tiered storage",
        "  bookkeeper: ledger 7 of a/b/t (MANAGED_LEDGER), entries and size unknown; a/b/u"
        " (MANAGED_LEDGER), 1 entry, size unknown",
        "  tiered storage: ledger 9 of a/b/t (offload u-1), 3 entries, 2.0 KiB",
    ]
    none = StringIO()
    print_missing(Console(file=none), [])
    assert none.getvalue() == "missing data: none\n"


def test_the_metrics_are_the_contract_s_gauges(tmp_path: Path) -> None:
    figures = {"orphans": 71_487, "young": 3, "foreign": 1, "unattributable": 0, "dangling": 2,
               "missing_ledgers": 4, "reclaimable_bytes": 5 * 1024**3,
               "orphans_by_component": {"MANAGED_LEDGER": 71_480,
                                        "DELAYED_INDEX_BUCKET": 7}}  # fmt: skip
    text = generate_latest(audit_registry(figures, 1_700_000_000.5, 42.0)).decode()
    samples = {(s.name, s.labels.get("status") or s.labels.get("component")): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}  # fmt: skip
    assert samples == {
        ("ledger_janitor_audit_orphan_ledgers", "orphan"): 71_487,
        ("ledger_janitor_audit_orphan_ledgers", "unattributable"): 0,
        ("ledger_janitor_audit_orphan_ledgers", "foreign"): 1,
        ("ledger_janitor_audit_orphan_ledgers", "young"): 3,
        ("ledger_janitor_audit_orphan_ledgers", "unknown"): 0,
        ("ledger_janitor_audit_orphan_ledgers_by_component", "MANAGED_LEDGER"): 71_480,
        ("ledger_janitor_audit_orphan_ledgers_by_component", "DELAYED_INDEX_BUCKET"): 7,
        ("ledger_janitor_audit_reclaimable_bytes", None): 5 * 1024**3,
        ("ledger_janitor_audit_dangling_references", None): 2,
        ("ledger_janitor_audit_missing_data_ledgers", None): 4,
        ("ledger_janitor_audit_last_success_timestamp_seconds", None): 1_700_000_000.5,
        ("ledger_janitor_audit_duration_seconds", None): 42.0,
    }
    path = tmp_path / "audit.prom"
    write_metrics(path, figures, 1.0, 2.0)
    assert "ledger_janitor_audit_duration_seconds 2.0" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["audit.prom"]


def test_the_console_summary_puts_orphans_first_largest_first_and_totals() -> None:
    """It sorted statuses and namespaces as text (`orphan` after `foreign`, `t/ns10` before
    `t/ns9` whatever their size) and had no total (issue 31)."""
    from audit.report.console import print_report

    def row(status: str, namespace: str | None, ledgers: int, size: int, ctime: int) -> Row:
        return Row(status=status, namespace=namespace, component="MANAGED_LEDGER",
                   ledgers=ledgers, bytes=size, oldest_ctime_ms=ctime)  # fmt: skip

    rows = [
        row("foreign", None, 1, 10, 3 * DAY),
        row("orphan", "t/ns10", 2, 2048, 5 * DAY),
        row("orphan", "t/ns9", 3, 4096, 4 * DAY),
        row("young", "t/ns1", 1, 9999, 9 * DAY),
    ]
    out = StringIO()
    print_report(Console(file=out, width=200, color_system=None), rows)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("│")]
    firsts = [
        f"{line.split('│')[1].strip()} {line.split('│')[2].strip()}".strip() for line in lines
    ]
    assert firsts == ["orphan t/ns9", "orphan t/ns10", "young t/ns1", "foreign -", "total"]
    total = lines[-1].split("│")
    assert [cell.strip() for cell in total[4:7]] == ["7", "15.8 KiB", "1970-01-04 00:00"]
