"""What an operator reads: the human output of every command, its exit code, and its errors.

Runs in-process through typer's runner (the same group, error printer and consoles the shell
gets), plus a few real processes for the entry point itself.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from config.urls import STORE_URL_FORMS
from harness.process import run_cli
from ledger_janitor import __version__
from ledger_janitor.cli import app

runner = CliRunner()
ZK_FORMS = "zk:host:port[,host:port][/chroot]"


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Commands point the root logger at the runner's stderr; put it back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers, root.level = handlers, level


def invoke(*args: str, width: int = 200, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, list(args), env={"COLUMNS": str(width), **(env or {})})


def command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand the CLI has, found by walking it."""
    paths: list[tuple[str, ...]] = [()]

    def walk(command: object, prefix: tuple[str, ...]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            paths.append((*prefix, name))
            walk(sub, (*prefix, name))

    walk(typer.main.get_command(app), ())
    return paths


def test_the_walk_finds_every_command() -> None:
    assert set(command_paths()) >= {
        (),
        ("run",),
        ("enqueue",),
        ("demo",),
        ("audit",),
        ("config",),
        ("config", "show"),
        ("archive",),
        ("archive", "list"),
        ("archive", "drain"),
        ("cursor",),
        ("cursor", "decode"),
        ("cursor", "encode"),
        ("cursor", "inspect"),
    }


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "(top)")
@pytest.mark.parametrize("width", [80, 200])
def test_every_help_page_renders(path: tuple[str, ...], width: int) -> None:
    result = invoke(*path, "--help", width=width)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout and "--help" in result.stdout
    assert "Traceback" not in result.output


def test_help_shows_brackets_literally() -> None:
    result = invoke("run", "--help")
    assert result.exit_code == 0
    assert "[/chroot]" in result.stdout


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ledger-janitor {__version__}"


def test_version_matches_the_package_metadata() -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert f'\nversion = "{__version__}"\n' in pyproject


@pytest.mark.parametrize("width", [80, 200])
def test_config_show_prints_every_setting_with_brackets_intact(width: int) -> None:
    """The README's first command: it used to crash on the `[/chroot]` in a help text."""
    result = invoke("config", "show", "--set", "sendDelaySecondsOfTwoPhaseDeletion=5", width=width)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert ZK_FORMS in out.replace("\n", "") or "[/chroot]" in out
    for key in ("twoPhaseDeletionEnabled", "persistentUnackedRangesWithMultipleEntriesEnabled"):
        assert key in out  # never cut short, whatever the width
    assert "default" in out and "cli" in out
    if width < 120:
        assert "sendDelaySecondsOfTwoPhaseDeletion=5  (cli)" in out


def test_config_show_json() -> None:
    result = invoke("config", "show", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.stdout)}
    assert f"Metadata store: {STORE_URL_FORMS};" in rows["metadataStoreUrl"]["doc"]


def test_config_values_and_sources_with_brackets_are_shown_as_they_are(tmp_path: Path) -> None:
    properties = tmp_path / "[prod].properties"
    properties.write_text("tlsTrustCertsFilePath=/etc/[prod]/ca.pem\n")
    result = invoke("config", "show", "-c", str(properties), width=80)
    assert result.exit_code == 0, result.output
    assert f"tlsTrustCertsFilePath=/etc/[prod]/ca.pem  (file:{properties})" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("config", "show", "-c", "/nowhere/[x].properties"), "/nowhere/[x].properties"),
        (("run", "--metadata-store", "zk:[x"), f"expected {STORE_URL_FORMS}"),
        (("run", "--metadata-store", "zk://h:2181"), "write zk:host:port"),
        (("run", "--set", "twoPhaseDeletionEnabled=false"), "nothing to run"),
        (("enqueue", "public/default/t", "1", "--metadata-store", "zk:h:0"), "no valid port"),
        (("archive", "list", "--metadata-store", "mysql:x"), "the scheme must be"),
        (("archive", "drain", "-n", "a/b", "--yes", "--metadata-store", "zk:"), "no ZooKeeper"),
        (("cursor", "inspect", "a/b/c", "sub", "--metadata-store", "zk:[x"), "[/chroot]"),
        (("audit", "--metadata-store", "sqlite:"), "no sqlite database path"),
        (("config", "show", "--set", "metricsPort=-1"), "expected an integer from 0 to 65535"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else None,
)
def test_errors_are_one_readable_line_and_exit_2(args: tuple[str, ...], expected: str) -> None:
    """Store-URL errors carry `[/chroot]`; printing them used to crash the error printer."""
    result = invoke(*args, width=80)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit | None), result.exception
    assert result.stderr.startswith("error: "), result.stderr
    assert expected in result.stderr
    assert result.stdout == ""


def test_a_usage_error_names_the_option() -> None:
    result = invoke("config", "show", "--set", "x[/y]")
    assert result.exit_code == 2
    assert "'x[/y]' is not KEY=VALUE" in result.output


def test_drain_without_yes_refuses_off_a_terminal() -> None:
    result = invoke("archive", "drain", "-n", "public/default")
    assert result.exit_code == 2
    assert "pass --yes (or --dry-run)" in result.stderr


def test_cursor_encode_then_decode_human_output(tmp_path: Path) -> None:
    source, output = tmp_path / "state.json", tmp_path / "entry.bin"
    source.write_text(json.dumps({"markDelete": {"ledgerId": 3, "entryId": 9}, "acked": []}))
    encoded = invoke("cursor", "encode", str(source), "-o", str(output))
    assert encoded.exit_code == 0, encoded.output
    assert f"to {output}" in encoded.stdout
    decoded = invoke("cursor", "decode", str(output))
    assert decoded.exit_code == 0, decoded.output
    assert 'markDelete: {"ledgerId": 3, "entryId": 9}' in decoded.stdout
    garbage = tmp_path / "[garbage].bin"
    garbage.write_bytes(b"\x08")
    broken = invoke("cursor", "decode", str(garbage))
    assert broken.exit_code == 2 and broken.stderr.startswith("error: ")
    assert "[garbage].bin" in broken.stderr


def test_chunk_files_are_numbered_so_a_shell_glob_reads_them_in_order(tmp_path: Path) -> None:
    doc = {
        "markDelete": {"ledgerId": 3, "entryId": 9},
        "acked": [[3, e, e] for e in range(11, 6000, 2)],
    }
    source, output = tmp_path / "in.json", tmp_path / "state"
    source.write_text(json.dumps(doc))
    encoded = invoke("cursor", "encode", str(source), "-o", str(output), "--max-entry-size", "512")
    assert encoded.exit_code == 0, encoded.output
    # What `cursor decode state.*` passes: the names in sorted order.
    globbed = sorted(tmp_path.glob("state.*"))
    assert len(globbed) > 11  # enough chunks for a two-digit number
    assert globbed[0].name == "state.00" and globbed[-1].name == "state.footer"
    decoded = invoke("cursor", "decode", *map(str, globbed), "--json")
    assert decoded.exit_code == 0, decoded.output
    assert json.loads(decoded.stdout)["acked"] == doc["acked"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("cursor", "encode", "in.json", "-o", "out", "--max-entry-size", "0"), "--max-entry-size"),
        (("cursor", "encode", "in.json", "-o", "out", "--max-entry-size=-5"), "--max-entry-size"),
        (("archive", "list", "--wait=-1"), "--wait"),
        (("config", "show", "--set", "managedLedgerCursorMaxEntriesPerLedger=-1"), "from 1 to"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else "",
)
def test_negative_counts_are_refused(args: tuple[str, ...], expected: str, tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text(json.dumps({"markDelete": {"ledgerId": 3, "entryId": 9}}))
    result = invoke(*(str(tmp_path / a) if a in ("in.json", "out") else a for a in args))
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit | None), result.exception
    assert expected in result.output and "Traceback" not in result.output


def cli_process(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=60)


def test_the_entry_point_prints_config_and_errors() -> None:
    shown = cli_process("config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "[/chroot]" in shown.stdout and shown.stderr == ""
    failed = cli_process("run", "--metadata-store", "zk:[x")
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: ") and "[/chroot]" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_a_boolean_is_read_as_java_reads_it_and_a_surprising_one_is_warned_about() -> None:
    result = cli_process("config", "show", "--set", "twoPhaseDeletionEnabled=yes")
    assert result.returncode == 0, result.stderr
    assert "twoPhaseDeletionEnabled=false  (cli)" in result.stdout
    assert (
        "twoPhaseDeletionEnabled='yes' (from cli): read as false, as Pulsar reads it: "
        "write true or false" in result.stderr
    )


def test_the_standalone_audit_entry_point_renders_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ledger_janitor.audit_main", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert result.returncode == 0, result.stderr
    assert "[/chroot]" in result.stdout


@pytest.mark.parametrize(
    "args",
    [("--help",), ("--bogus",), ("--min-age", "soon"), ("--inventory", "/no/such/file"), ("x",)],
    ids=" ".join,
)
def test_the_audit_alone_answers_as_the_whole_command_line_does(args: tuple[str, ...]) -> None:
    """`ledger-janitor audit` runs in a group holding that one command (ledger_janitor.entry):
    the same help, usage line, errors and exit codes as the whole command line's."""
    alone, whole = (_named_process(program, "audit", *args) for program in (ALONE, WHOLE))
    assert (alone.returncode, alone.stdout, alone.stderr) == (
        whole.returncode,
        whole.stdout,
        whole.stderr,
    )
    assert alone.returncode == (0 if args == ("--help",) else 2)


# The entry point, and the whole command line as `ledger_janitor.cli` builds it, each under the
# installed script's name.
ALONE = "import sys; sys.argv[0] = 'ledger-janitor'; from ledger_janitor.entry import main; main()"
WHOLE = "import sys; sys.argv[0] = 'ledger-janitor'; from ledger_janitor.cli import main; main()"


def _named_process(program: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )


def test_the_audit_imports_neither_the_worker_nor_the_cursor_tools() -> None:
    listed = subprocess.run(
        [sys.executable, "-c", IMPORTED_BY_AUDIT_HELP],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout.splitlines()[-1]) == []


IMPORTED_BY_AUDIT_HELP = """
import contextlib, io, json, sys
from ledger_janitor.entry import main
with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
    main(["audit", "--help"])
heavy = ("consumers", "cursor", "ledger_janitor.cli", "ledger_janitor.commands.archive")
print(json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))
"""
