"""The `audit` command offline (inventory and references from files), its errors, and that
nothing but `audit/` imports PySpark."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from pyspark.sql import SparkSession
from rich.console import Console
from typer.testing import CliRunner

from audit import pipeline
from audit.errors import AuditError
from audit.options import AuditOptions
from audit.pipeline import run_audit
from audit.progress import ScanProgress
from audit.schema import INVENTORY_SCHEMA
from ledger_janitor.commands.audit import parse_duration_ms, parse_time_ms
from tests.integration.audit.test_end_to_end import cli_app

NOW = 1_700_000_000_000
DAY = 86_400_000
OLD = NOW - 9 * DAY


def ledger(
    ledger_id: int, ctime: int | None, name: str | None, size: int | None = None
) -> dict[str, object]:
    metadata = (
        {}
        if name is None
        else {"application": "pulsar", "component": "managed-ledger", "pulsar/managed-ledger": name}
    )
    return {"ledger_id": ledger_id, "ctime_ms": ctime, "custom_metadata": metadata, "size": size}


INVENTORY = [
    ledger(1, OLD, "a/b/persistent/t", 10),
    ledger(2, OLD, "a/b/persistent/t", 20),
    ledger(3, OLD, "a/c/persistent/u%3Av"),
    ledger(4, None, "a/b/persistent/t"),
    ledger(5, OLD, None),
]
REFERENCES = [
    {"ledger_id": 1, "topic": "a/b/t", "component": "MANAGED_LEDGER"},
    {"ledger_id": 7, "topic": "a/b/t"},
    {"ledger_id": 8, "topic": "a/b/t", "bookkeeper_deleted": True},
]


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def run(*args: str) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli_app(), ["audit", *args])
    return result.exit_code, result.stdout, result.stderr, result.exception


def offline(inventory: Path, references: Path, *extra: str) -> list[str]:
    # A store that does not exist: an offline audit must not open it.
    return ["--inventory", str(inventory), "--references", str(references), "--now", str(NOW),
            "--metadata-store", "sqlite:/nonexistent/janitor.db", *extra]  # fmt: skip


def test_offline_audit_from_json_lines(tmp_path: Path) -> None:
    inventory = write_jsonl(tmp_path / "inventory.jsonl", INVENTORY)
    references = write_jsonl(tmp_path / "references.jsonl", REFERENCES)
    code, stdout, _, _ = run(*offline(inventory, references, "--json", "--min-age", "7d"))
    assert code == 3  # ledger 7 is dangling: possible data loss
    figures = json.loads(stdout.strip().splitlines()[-1])
    assert {k: figures[k] for k in ("ledgers", "referenced", "orphans", "dangling")} == {
        "ledgers": 5,
        "referenced": 3,
        "orphans": 2,
        "dangling": 1,
    }
    assert (figures["young"], figures["foreign"], figures["enqueued"]) == (1, 1, 0)
    assert set(figures) >= {"ledgers", "referenced", "orphans", "dangling", "enqueued", "seconds"}


def test_the_summary_table_names_namespaces_and_components(tmp_path: Path) -> None:
    inventory = write_jsonl(tmp_path / "inventory.json", INVENTORY)
    references = write_jsonl(tmp_path / "references.json", REFERENCES)
    code, stdout, stderr, _ = run(*offline(inventory, references))
    assert code == 3
    assert "a/b" in stdout and "a/c" in stdout and "MANAGED_LEDGER" in stdout
    assert "20 B" in stdout  # ledger 2; ledger 3's size is unknown
    assert "MISSING DATA: 1 ledger referenced by metadata is gone" in stdout
    assert "  bookkeeper: ledger 7 of a/b/t (-), entries and size unknown" in stdout
    assert "dry run: 2 orphans found" in stderr


def test_a_parquet_inventory_reads_like_json_lines(spark: SparkSession, tmp_path: Path) -> None:
    rows = [(r["ledger_id"], r["ctime_ms"], r["custom_metadata"], r.get("size")) for r in INVENTORY]
    spark.createDataFrame(rows, INVENTORY_SCHEMA).write.parquet(str(tmp_path / "inventory.parquet"))
    references = write_jsonl(tmp_path / "references.jsonl", REFERENCES)
    code, stdout, _, _ = run(*offline(tmp_path / "inventory.parquet", references, "--json"))
    assert code == 3
    assert json.loads(stdout.strip().splitlines()[-1])["orphans"] == 2


@pytest.mark.parametrize("max_words", [None, 0], ids=["id words", "sparse: anti-joins"])
def test_an_audit_of_parquet_files_caches_nothing_and_writes_its_report(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_words: int | None
) -> None:
    if max_words is not None:  # the referenced ids take more words than may be broadcast
        monkeypatch.setattr(pipeline, "MAX_BROADCAST_WORDS", max_words)
    rows = [(r["ledger_id"], r["ctime_ms"], r["custom_metadata"], r.get("size")) for r in INVENTORY]
    spark.createDataFrame(rows, INVENTORY_SCHEMA).write.parquet(str(tmp_path / "inventory.parquet"))
    spark.read.json(str(write_jsonl(tmp_path / "r.jsonl", REFERENCES))).write.parquet(
        str(tmp_path / "references.parquet")
    )
    options = AuditOptions(
        NOW,
        7 * DAY,
        inventory_file=tmp_path / "inventory.parquet",
        references_file=tmp_path / "references.parquet",
        output=tmp_path / "report",
    )
    cached = spark.sparkContext._jsc.getPersistentRDDs().size()
    result = run_audit(spark, options, ScanProgress(spark.sparkContext, Console(quiet=True)))
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == cached
    figures = result.figures()
    assert {k: figures[k] for k in ("ledgers", "referenced", "orphans", "dangling", "young")} == {
        "ledgers": 5,
        "referenced": 3,
        "orphans": 2,
        "dangling": 1,
        "young": 1,
    }
    assert result.dangling_ids == [7]
    summary = spark.read.parquet(str(tmp_path / "report" / "summary")).collect()
    assert sorted((r["status"], r["namespace"], r["ledgers"]) for r in summary) == [
        ("foreign", None, 1),
        ("orphan", "a/b", 1),
        ("orphan", "a/c", 1),
        ("young", "a/b", 1),
    ]
    orphans = spark.read.parquet(str(tmp_path / "report" / "unreferenced" / "status=orphan"))
    assert sorted(r["ledger_id"] for r in orphans.collect()) == [2, 3]
    assert json.loads((tmp_path / "report" / "audit.json").read_text())["orphans"] == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"ledger_id": 1, "ctime_ms": 5, "custom_metadata": {}}\n{not json\n', "inventory"),
        ('{"ledger_id": "one", "ctime_ms": 5, "custom_metadata": {}}\n', "inventory"),
        ('{"ctime_ms": 5, "custom_metadata": {}}\n', "inventory.jsonl line 1: no ledger_id"),
    ],
)
def test_a_malformed_inventory_aborts(tmp_path: Path, content: str, message: str) -> None:
    inventory = tmp_path / "inventory.jsonl"
    inventory.write_text(content)
    references = write_jsonl(tmp_path / "references.jsonl", REFERENCES)
    code, _, _, exc = run(*offline(inventory, references))
    assert code != 0 and isinstance(exc, AuditError), exc
    assert message in str(exc)


def test_a_parquet_column_of_the_wrong_type_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    spark.createDataFrame([("1", 5)], "ledger_id string, ctime_ms long").write.parquet(
        str(tmp_path / "bad.parquet")
    )
    references = write_jsonl(tmp_path / "references.jsonl", REFERENCES)
    _, _, _, exc = run(*offline(tmp_path / "bad.parquet", references))
    assert isinstance(exc, AuditError) and "'ledger_id' is string, not bigint" in str(exc)


def test_no_references_at_all_is_refused(tmp_path: Path) -> None:
    inventory = write_jsonl(tmp_path / "inventory.jsonl", INVENTORY)
    references = write_jsonl(tmp_path / "references.jsonl", [])
    _, _, _, exc = run(*offline(inventory, references))
    assert isinstance(exc, AuditError) and "no references at all" in str(exc)


def test_durations_and_times() -> None:
    assert parse_duration_ms("24h") == 86_400_000
    assert [parse_duration_ms(t) for t in ("90m", "7d", "3600", "500ms", "0")] == [
        5_400_000,
        604_800_000,
        3_600_000,
        500,
        0,
    ]
    assert parse_time_ms("1700000000000") == 1_700_000_000_000
    assert parse_time_ms("2023-11-14T22:13:20") == 1_700_000_000_000
    assert parse_time_ms("2023-11-15T00:13:20+02:00") == 1_700_000_000_000
    for bad in ("-1h", "1 day", "h"):
        with pytest.raises(typer.BadParameter):
            parse_duration_ms(bad)
    with pytest.raises(typer.BadParameter):
        parse_time_ms("yesterday")


def test_only_the_audit_imports_pyspark() -> None:
    script = textwrap.dedent(
        """
        import sys
        import ledger_janitor.commands.audit, ledger_janitor.cli, ledger_janitor.sidecar.wiring
        assert "pyspark" not in sys.modules, "the sidecar imported pyspark"
        sys.modules["pyspark"] = None  # as if the [audit] extra were not installed
        import typer
        from typer.testing import CliRunner
        app = typer.Typer()
        app.command("audit")(ledger_janitor.commands.audit.audit_command)
        app.callback()(lambda: None)
        result = CliRunner().invoke(app, ["audit", "--inventory", "x.jsonl"])
        print(result.exception)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "the audit needs PySpark" in done.stdout, done.stdout + done.stderr
