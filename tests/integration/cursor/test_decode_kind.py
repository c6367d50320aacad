"""`cursor decode` given the other message than `--kind` names (issue 31): it says what the
bytes look like and which `--kind` reads them, instead of `unexpected field 3`. Run as an
operator runs it: a process of its own, its stderr read whole."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from harness.process import run_cli

POSITION = {"markDelete": {"ledgerId": 3, "entryId": 9}, "acked": [[3, 11, 12], [3, 20, 20]]}
CURSOR = {"cursorsLedgerId": 7, "markDelete": {"ledgerId": 3, "entryId": 9}, "lastActive": 5}


def encoded(tmp_path: Path, kind: str, doc: Mapping[str, object]) -> Path:
    source, output = tmp_path / f"{kind}.json", tmp_path / f"{kind}.bin"
    source.write_text(json.dumps(doc))
    written = run_cli("cursor", "encode", str(source), "-o", str(output), "--kind", kind)
    assert written.returncode == 0, written.stderr
    return output


def test_a_cursor_ledgers_entry_read_as_the_znode_names_the_kind_that_reads_it(
    tmp_path: Path,
) -> None:
    entry = encoded(tmp_path, "position-info", POSITION)
    refused = run_cli("cursor", "decode", "--kind", "cursor-info", str(entry))
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"error: {entry}: not a ManagedCursorInfo"), refused.stderr
    assert (
        "it looks like a PositionInfo (a cursor ledger's entry): try --kind position-info"
        in refused.stderr
    )
    assert run_cli("cursor", "decode", "--kind", "position-info", str(entry)).returncode == 0


def test_a_cursors_znode_read_as_an_entry_names_the_kind_that_reads_it(tmp_path: Path) -> None:
    znode = encoded(tmp_path, "cursor-info", CURSOR)
    refused = run_cli("cursor", "decode", str(znode))  # --kind position-info, the default
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"error: {znode}: not a PositionInfo"), refused.stderr
    assert (
        "it looks like a ManagedCursorInfo (a cursor's znode): try --kind cursor-info"
        in refused.stderr
    )


def test_bytes_that_are_neither_say_so(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes([0x1F, 0x01, 0x02]))  # field 3, wire type 7: no protobuf at all
    for kind in ("position-info", "cursor-info"):
        refused = run_cli("cursor", "decode", "--kind", kind, str(garbage))
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "neither a PositionInfo nor a ManagedCursorInfo" in refused.stderr
        assert "try --kind" not in refused.stderr
