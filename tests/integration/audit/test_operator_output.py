"""The audit as an operator runs it, in a subprocess, read as they read it: a malformed input
named by file and line in one `error:` line; exit code 3 when data may be lost, with each lost
ledger listed once; counts with thousands separators and plurals; a store that is not there
said before Spark starts; the Prometheus metrics file (issue 26, defects 8 and 13)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from tests.integration.audit.test_cli import NOW, OLD, ledger, offline, write_jsonl
from tests.integration.audit.test_end_to_end import cli_app

ORPHANS = 1_234
SPARK_STARTED = "log4j"  # Spark's JVM says which logging profile it uses as it starts


def audit_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ledger_janitor", "audit", "--spark-master", "local[2]", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "COLUMNS": "80"},
    )


def one_error_line(stderr: str) -> str:
    """The error, checked to be the one `error:` line, the last, with no trace before it."""
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    assert "Traceback" not in stderr and "\tat " not in stderr and "Py4J" not in stderr, stderr
    return errors[0]


def test_a_malformed_json_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    rows = [json.dumps(ledger(i, OLD, "a/b/persistent/t")) for i in range(1, 6)]
    rows[2] = '{"ledger_id": 3, "ctime_ms": 5, custom_metadata: {}}'
    inventory = tmp_path / "inventory.jsonl"
    inventory.write_text("\n".join(rows) + "\n")
    references = write_jsonl(tmp_path / "references.jsonl", [{"ledger_id": 1, "topic": "a/b/t"}])
    done = audit_process(*offline(inventory, references))
    assert done.returncode == 2, done.stderr
    assert one_error_line(done.stderr) == (
        "error: inventory.jsonl line 3: not valid JSON (Expecting property name enclosed in "
        "double quotes at column 33); audit aborted"
    )
    assert done.stdout == ""


def test_data_loss_exits_3_lists_each_lost_ledger_once_and_exports_metrics(
    tmp_path: Path,
) -> None:
    inventory = [ledger(i, OLD, "a/b/persistent/t", 1024) for i in range(100, 100 + ORPHANS)]
    inventory.append(ledger(1, OLD, "a/b/persistent/t"))
    lost = {"ledger_id": 7, "component": "MANAGED_LEDGER"}
    references = [
        {"ledger_id": 1, "topic": "a/b/t"},
        {**lost, "topic": "a/b/t"},
        {**lost, "topic": "a/b/u"},
    ]  # fmt: skip  (one lost ledger, two referrers)
    metrics = tmp_path / "audit.prom"
    done = audit_process(
        *offline(
            write_jsonl(tmp_path / "inventory.jsonl", inventory),
            write_jsonl(tmp_path / "references.jsonl", references),
            "--metrics-file", str(metrics), "--output", str(tmp_path / "report"),
        )
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    out = done.stdout
    assert "1,234" in out  # the summary table's orphans
    assert (
        "MISSING DATA: 1 ledger referenced by metadata is gone from storage (possible data loss;"
        " never enqueued): 1 dangling reference (no BookKeeper ledger)" in out
    )
    assert out.count("ledger 7 ") == 1 and "DANGLING" not in out
    missing = "  bookkeeper: ledger 7 of a/b/t (MANAGED_LEDGER), entries and size unknown; a/b/u "
    assert missing in out
    assert "dry run: 1,234 orphans found" in done.stderr
    inventory_file = tmp_path / "inventory.jsonl"
    assert f"inventory: reading {inventory_file}: done in" in done.stderr  # one line, whole
    assert "reading ledger metadata" not in done.stderr

    text = metrics.read_text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for f in families.values() for s in f.samples}  # fmt: skip
    prefix = "ledger_janitor_audit_"
    assert values[(prefix + "orphan_ledgers", (("status", "orphan"),))] == ORPHANS
    assert values[(prefix + "orphan_ledgers", (("status", "young"),))] == 0
    assert values[(prefix + "reclaimable_bytes", ())] == ORPHANS * 1024
    assert values[(prefix + "dangling_references", ())] == 1
    assert values[(prefix + "missing_data_ledgers", ())] == 1
    assert values[(prefix + "duration_seconds", ())] > 0
    assert values[(prefix + "last_success_timestamp_seconds", ())] > NOW / 1000
    assert all(f.type == "gauge" for f in families.values())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("audit.prom")) == [
        "audit.prom"  # no temporary file left beside it
    ]
    if shutil.which("promtool"):
        checked = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_clean_audit_exits_0_and_its_metrics_say_so(spark: SparkSession, tmp_path: Path) -> None:
    two = [ledger(1, OLD, "a/b/persistent/t", 10), ledger(2, OLD, "a/b/persistent/t", 20)]
    inventory = write_jsonl(tmp_path / "i.jsonl", two)
    references = write_jsonl(tmp_path / "r.jsonl", [{"ledger_id": 1, "topic": "a/b/t"}])
    metrics = tmp_path / "audit.prom"
    metrics.write_text("stale\n")
    result = CliRunner().invoke(
        cli_app(), ["audit", *offline(inventory, references, "--metrics-file", str(metrics))]
    )
    assert result.exit_code == 0, result.output
    assert "missing data: none" in result.stdout
    assert "dry run: 1 orphan found" in result.stderr
    samples = {s.name: s.value for f in text_string_to_metric_families(metrics.read_text())
               for s in f.samples if not s.labels}  # fmt: skip
    assert samples["ledger_janitor_audit_dangling_references"] == 0
    assert samples["ledger_janitor_audit_missing_data_ledgers"] == 0
    assert samples["ledger_janitor_audit_reclaimable_bytes"] == 20


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens on it once closed


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("--metadata-store", "sqlite:/nonexistent/janitor.db"),
            "error: cannot reach the metadata store at sqlite:/nonexistent/janitor.db (no such "
            "file: /nonexistent/janitor.db); or read it from a file with --references FILE",
        ),
        (
            ("--metadata-store", "zk:127.0.0.1:{port}"),
            "error: cannot reach the metadata store at zk:127.0.0.1:{port} (127.0.0.1:{port}: "
            "Connection refused); or read it from a file with --references FILE",
        ),
        (
            ("--references", "/nonexistent/references.jsonl"),
            "error: no such file: /nonexistent/references.jsonl",
        ),
        (
            ("--references", "{tmp}/inventory.jsonl", "--metrics-file", "/nonexistent/a.prom"),
            "error: --metrics-file /nonexistent/a.prom: no directory /nonexistent",
        ),
        (
            ("--references", "{tmp}/inventory.jsonl", "--metrics-file", "{tmp}"),
            "error: --metrics-file {tmp} is a directory; name a *.prom file",
        ),
        (
            ("--references", "{tmp}/garbage.parquet"),
            "error: {tmp}/garbage.parquet is not a Parquet file (no PAR1 at its start and end); "
            "a JSON-lines input is named *.jsonl",
        ),
        (
            ("--references", "{tmp}/dataset"),
            "error: {tmp}/dataset/status=orphan/part-1.parquet is not a Parquet file (no PAR1 at "
            "its start and end); a JSON-lines input is named *.jsonl",
        ),
        (
            ("--references", "{tmp}/empty"),
            "error: {tmp}/empty: a directory with no Parquet file in it",
        ),
    ],
    ids=[
        "no embedded store",
        "ZooKeeper not there",
        "no references file",
        "no metrics dir",
        "metrics file a dir",
        "not Parquet",
        "a dataset part not Parquet",
        "no Parquet in a directory",
    ],
)
def test_inputs_are_checked_before_spark_starts(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    inventory = write_jsonl(tmp_path / "inventory.jsonl", [ledger(1, OLD, None)])
    (tmp_path / "garbage.parquet").write_text('{"ledger_id": 1}\n')  # JSON, misnamed
    # A dataset as Spark writes one: its markers and checksums are no data; one part is bad.
    part = tmp_path / "dataset" / "status=orphan" / "part-1.parquet"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"PAR1" + b"\0" * 16)  # cut short: no footer
    (tmp_path / "dataset" / "_SUCCESS").touch()
    (tmp_path / "dataset" / "status=orphan" / ".part-1.parquet.crc").touch()
    (tmp_path / "empty").mkdir()
    port = closed_port()
    given = [a.format(port=port, tmp=tmp_path) for a in args]
    done = audit_process("--inventory", str(inventory), *given)
    assert done.returncode == 2
    assert one_error_line(done.stderr) == expected.format(port=port, tmp=tmp_path)
    assert SPARK_STARTED not in done.stderr and done.stdout == ""


def test_the_help_documents_the_exit_codes_and_the_metrics_file() -> None:
    done = audit_process("--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "Exit codes: 0 the audit ran and found no missing data; 2 a usage or input" in text
    assert "3 the audit ran and found dangling references or missing offloaded data" in text
    assert "--metrics-file PATH" in text and "node_exporter's textfile collector" in text
