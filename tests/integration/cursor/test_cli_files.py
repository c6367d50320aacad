"""`cursor encode` and `cursor decode` as an operator runs them: the README's example in a
shell, wrong JSON, chunk files beside other files, and what a big encode prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.process import run_cli

ROOT = Path(__file__).resolve().parents[3]

# The README's cursor example, exactly as handed to it (the encode/decode lines the README
# already had are kept word for word; the test below checks the README against this).
EXAMPLE = """\
# 75 acknowledged entries with gaps after the mark-delete position 3:9 (format: encode --help)
printf '{"markDelete": {"ledgerId": 3, "entryId": 9}, "acked": [%s]}\\n' \\
    "$(seq 11 2 159 | sed 's/.*/[3, &, &]/' | paste -sd, -)" > state.json
ledger-janitor cursor encode state.json --max-entry-size 1024 -o state   # state.0, ... state.footer
ledger-janitor cursor decode state.* --json            # the chunks in order, the footer last
ledger-janitor cursor encode state.json --kind position-info --ranges long-list-map \\
    --compression ZSTD -o entry.bin
ledger-janitor cursor decode entry.bin --json          # bytes (or a chunk sequence) to JSON
"""
ACKED = [[3, entry, entry] for entry in range(11, 160, 2)]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("cursor", *args, cwd=cwd)


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one `error:` line a mistake must produce, exit code 2, nothing on stdout."""
    assert result.returncode == 2, result
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`script` in bash, `ledger-janitor` being this checkout's command line."""
    bin_dir = cwd / "bin"
    bin_dir.mkdir()
    command = bin_dir / "ledger-janitor"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ledger_janitor "$@"\n')
    command.chmod(0o755)
    work = cwd / "work"
    work.mkdir()
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=work,
        env=env,
    )


def commands(block: str) -> list[str]:
    """The commands of a shell block: continuations joined, comments and spacing dropped."""
    joined = block.replace("\\\n", " ")
    found = [re.sub(r"\s+#.*$", "", line).strip() for line in joined.splitlines()]
    return [" ".join(line.split()) for line in found if line and not line.startswith("#")]


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    ran = shell(EXAMPLE, tmp_path)
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout.splitlines()
    # Today: `error: a 277-byte entry starting with '{' is no footer`, state.json read as one.
    assert re.fullmatch(r"wrote 1,\d{3} bytes as 2 chunks \(state\.0 \.\.\. state\.1\).*", out[0])
    chunked, single = (json.loads(line) for line in out if line.startswith("{"))
    assert chunked["acked"] == ACKED and chunked["entries"] == 3
    assert single["acked"] == ACKED and single["compression"] == "ZSTD"
    assert ran.stderr == "note: left out state.json: not part of the chunk sequence\n"


def test_the_readme_shows_these_commands() -> None:
    """Every cursor encode/decode line in the README's cursor section is one run above."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Cursor state") :]
    block = section[section.index("```bash\n") + 8 : section.index("```\n", 8)]
    shown = [c for c in commands(block) if re.match(r"ledger-janitor cursor (en|de)code", c)]
    assert shown and set(shown) <= set(commands(EXAMPLE))


GOOD = '"markDelete": {"ledgerId": 3, "entryId": 9}'


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("nope", "in.json: not JSON: expected ident at line 1 column 2"),
        ("[1, 2]", "in.json: the document must be a JSON object, got [1, 2]"),
        ("{}", "in.json: markDelete is missing; expected {"),
        ('{"markDelete": null}', "in.json: markDelete: input should be an object, got null"),
        ('{"markDelete": {"ledgerId": 3}}', "in.json: markDelete.entryId: missing"),
        (f'{{{GOOD}, "acked": [[3, 5, 2]]}}', "in.json: acked[0]: firstEntry is after lastEntry"),
        (f'{{{GOOD}, "acked": [[3, -5, 2]]}}', "in.json: acked[0][1]: input should be greater"),
        (
            f'{{{GOOD}, "acked": [[3, "5", 6]]}}',
            'acked[0][1]: input should be a valid integer, got "5"',
        ),
        (
            f'{{{GOOD}, "acked": [[3, 5.5, 6]]}}',
            "acked[0][1]: input should be a valid integer, got 5.5",
        ),
        (f'{{{GOOD}, "acked": [[3, 5]]}}', "in.json: acked[0][2]: missing"),
        (f'{{{GOOD}, "acked": {{"3": 5}}}}', "in.json: acked: input should be a valid array"),
        (f'{{{GOOD}, "ackd": []}}', "in.json: ackd: unknown field; the fields are "),
        (
            f'{{{GOOD}, "individualDeletedMessages": [[3, 9, 3, 2]]}}',
            "in.json: individualDeletedMessages[0]: lower is not before upper in [3, 9, 3, 2]",
        ),
        (f'{{{GOOD}, "properties": {{"a": "x"}}}}', "in.json: properties.a: input should be"),
        ('{"kind": "cursor-info"}', 'in.json: kind is "cursor-info", but --kind is position-info'),
    ],
)
def test_wrong_json_is_one_error_line(tmp_path: Path, content: str, expected: str) -> None:
    source = tmp_path / "in.json"
    source.write_text(content)
    line = one_error(cli("encode", "in.json", "-o", "out.bin", cwd=tmp_path))
    # Today: `'NoneType' object is not subscriptable`, or a traceback (rc 1).
    assert expected in line and not (tmp_path / "out.bin").exists()


def test_a_missing_input_file_is_one_error_line(tmp_path: Path) -> None:
    line = one_error(cli("encode", "gone.json", "-o", "out.bin", cwd=tmp_path))
    assert line == "error: cannot read gone.json: No such file or directory"


def test_files_that_are_no_entries_are_named(tmp_path: Path) -> None:
    source = tmp_path / "state.json"
    source.write_text(json.dumps({"markDelete": {"ledgerId": 3, "entryId": 9}, "acked": ACKED}))
    assert (
        cli("encode", "state.json", "--max-entry-size", "400", "-o", "s", cwd=tmp_path).returncode
        == 0
    )
    alone = one_error(cli("decode", "state.json", cwd=tmp_path))
    assert alone.startswith("error: state.json: a JSON document, not a cursor entry")
    mixed = one_error(cli("decode", "s.0", "state.json", cwd=tmp_path))
    assert mixed.startswith("error: state.json: a JSON document, not a cursor entry")
    short = one_error(cli("decode", "s.0", "s.2", "s.footer", cwd=tmp_path))
    assert (
        short == "error: s.footer counts 3 chunks, s.0 to s.2 (zero-padded alike); given: s.0, s.2"
    )
    footer_first = one_error(cli("decode", "s.footer", cwd=tmp_path))
    assert footer_first == "error: s.footer: a chunk footer, which comes last, after its 3 chunks"
    (tmp_path / "s.00").write_bytes(b"left by an earlier encode")
    twice = one_error(cli("decode", "s.0", "s.00", "s.1", "s.2", "s.footer", cwd=tmp_path))
    assert twice.startswith("error: s.0 and s.00 are both chunk 0 of s.footer")
    # Given out of order, encode's names put them back in order.
    ordered = cli("decode", "s.footer", "s.2", "s.0", "s.1", "--json", cwd=tmp_path)
    assert json.loads(ordered.stdout)["acked"] == ACKED


def test_a_big_encode_prints_one_short_line(tmp_path: Path) -> None:
    doc = {
        "markDelete": {"ledgerId": 3, "entryId": 0},
        "acked": [[3, e, e] for e in range(2, 40_000, 2)],
    }
    (tmp_path / "big.json").write_text(json.dumps(doc))
    ran = cli("encode", "big.json", "--max-entry-size", "128", "-o", "big", cwd=tmp_path)
    files = sorted(p.name for p in tmp_path.glob("big.*") if p.name != "big.json")
    assert ran.returncode == 0 and len(files) > 2000
    # Today: every file named on one line, 15 KB here, 152 KB for 2M ranges in 1 KB entries.
    assert len(ran.stdout.encode()) < 500 and len(ran.stdout.splitlines()) == 1
    assert f"{len(files) - 1:,} chunks (big.0000 ... big.{len(files) - 2}" in ran.stdout
    assert f"{len(files):,} files" in ran.stdout
    listed = cli(
        "encode", "big.json", "--max-entry-size", "128", "-o", "big", "--json", cwd=tmp_path
    )
    written = json.loads(listed.stdout)
    assert sorted(f["file"] for f in written["files"]) == files
    verbose = cli("encode", "big.json", "--max-entry-size", "128", "-o", "big", "-v", cwd=tmp_path)
    assert len(verbose.stdout.splitlines()) == len(files) + 1


def test_one_entry_is_not_called_1_entries(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text(
        json.dumps({"markDelete": {"ledgerId": 3, "entryId": 9}, "acked": [[3, 11, 11]]})
    )
    ran = cli("encode", "in.json", "--max-entry-size", "1024", "-o", "entry.bin", cwd=tmp_path)
    # Today: "wrote 20 bytes as 1 entries: entry.bin".
    assert re.fullmatch(
        r"wrote \d+ bytes to entry\.bin \(one entry: smaller than --max-entry-size\)\n", ran.stdout
    )
    summary = cli("decode", "entry.bin", cwd=tmp_path).stdout
    assert "acked: 1 item\n" in summary and "batchedEntryDeletionIndexInfo: 0 batches" in summary
