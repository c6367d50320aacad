"""`ledger-janitor cursor decode|encode|inspect`, through typer's runner on `cursor_app`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner

from cursor import CursorSettings, DurableCursor, Position
from deletion.domain.message import PendingDeleteLedgerInfo
from harness.cursor_fixtures import CursorEnv
from ledger_janitor.commands.cursor import cursor_app

T = TypeVar("T")
runner = CliRunner()

DOC = {
    "markDelete": {"ledgerId": 3, "entryId": 9},
    "acked": [[3, 11, 12], [3, 20, 20], [4, 0, 63]],
    "batchedEntryDeletionIndexInfo": [{"ledgerId": 3, "entryId": 15, "deleteSet": [10]}],
    "properties": {"a": 2},
}


def run(*args: str) -> Any:
    result = runner.invoke(cursor_app, list(args))
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("ranges", ["message-range", "long-list-map"])
@pytest.mark.parametrize("compression", ["NONE", "LZ4", "ZSTD"])
def test_encode_then_decode_gives_the_same_acknowledgments(
    tmp_path: Path, ranges: str, compression: str
) -> None:
    source, output = tmp_path / "in.json", tmp_path / "out.bin"
    source.write_text(json.dumps(DOC))
    run("encode", str(source), "-o", str(output), "--ranges", ranges, "--compression", compression)
    decoded = json.loads(run("decode", str(output), "--json").stdout)
    assert decoded["markDelete"] == DOC["markDelete"] and decoded["acked"] == DOC["acked"]
    assert decoded["rangeCount"] == 3 and decoded["compression"] == compression
    assert decoded["properties"] == {"a": 2}
    assert decoded["batchedEntryDeletionIndexInfo"] == DOC["batchedEntryDeletionIndexInfo"]
    if ranges == "message-range":
        assert decoded["individualDeletedMessages"][0] == [3, 10, 3, 12]
    else:
        assert decoded["individualDeletedMessageRanges"][1] == {"key": 4, "values": [-1]}


def test_a_chunk_sequence_is_written_and_read_back(tmp_path: Path) -> None:
    doc = {
        "markDelete": {"ledgerId": 3, "entryId": 9},
        "acked": [[3, e, e] for e in range(11, 400, 2)],
    }
    source, output = tmp_path / "in.json", tmp_path / "state"
    source.write_text(json.dumps(doc))
    run("encode", str(source), "-o", str(output), "--max-entry-size", "1024")
    parts = sorted(
        tmp_path.glob("state.*"), key=lambda p: (p.suffix == ".footer", len(p.name), p.name)
    )
    assert len(parts) > 3 and all(part.exists() for part in parts)
    decoded = json.loads(run("decode", *map(str, parts), "--json").stdout)
    assert decoded["acked"] == doc["acked"] and decoded["entries"] == len(parts)


def test_cursor_info_round_trip_and_human_summary(tmp_path: Path) -> None:
    doc = {**DOC, "cursorsLedgerId": 12, "lastActive": 1000, "cursorProperties": {"k": "v"}}
    source, output = tmp_path / "in.json", tmp_path / "znode"
    source.write_text(json.dumps(doc))
    run("encode", str(source), "--kind", "cursor-info", "-o", str(output))
    decoded = json.loads(run("decode", str(output), "--kind", "cursor-info", "--json").stdout)
    assert decoded["cursorsLedgerId"] == 12 and decoded["cursorProperties"] == {"k": "v"}
    assert decoded["acked"] == DOC["acked"]
    summary = run("decode", str(output), "--kind", "cursor-info").stdout
    assert "rangeCount: 3" in summary and "acked: 3 items" in summary


def test_errors_are_reported_not_raised(tmp_path: Path) -> None:
    source, garbage = tmp_path / "in.json", tmp_path / "garbage"
    source.write_text(json.dumps(DOC))
    garbage.write_bytes(b"\x08")
    refused = runner.invoke(
        cursor_app,
        ["encode", str(source), "--kind", "cursor-info", "--ranges", "long-list-map", "-o", "x"],
    )
    assert refused.exit_code == 2 and "LongListMap" in refused.output
    broken = runner.invoke(cursor_app, ["decode", str(garbage)])
    assert broken.exit_code == 2 and "error" in broken.output


def test_decode_reads_a_state_written_by_a_newer_pulsar(tmp_path: Path) -> None:
    # PositionInfo{3:9, [(3:10, 3:12]]} with field 15 = "hi" appended, as an unknown field.
    entry = tmp_path / "entry"
    entry.write_bytes(bytes.fromhex("080310091a0c0a040803100a12040803100c7a026869"))
    doc = json.loads(run("decode", str(entry), "--json").output)
    assert doc["markDelete"] == {"ledgerId": 3, "entryId": 9}


class NothingToDelete:
    """A cursor's first ledger replaces none, so opening one enqueues nothing."""

    def enqueue(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Any]:
        assert not infos
        return []

    def enqueue_then_commit(
        self, infos: Sequence[PendingDeleteLedgerInfo], commit: Callable[[], T]
    ) -> T:
        assert not infos
        return commit()


def test_inspect_a_live_cursor(cursor_env: CursorEnv) -> None:
    settings = CursorSettings(max_unacked_ranges_to_persist=2)
    cursor = DurableCursor.open(
        cursor_env.topic, "sub", cursor_env.stores(NothingToDelete()), settings
    )
    cursor.ack([Position(7, 1), Position(7, 3), Position(7, 5)])
    cursor.persist()
    report = json.loads(
        run(
            "inspect",
            str(cursor_env.topic),
            "sub",
            "--metadata-store",
            cursor_env.backend.metadata_url,
            "--ledger-store",
            cursor_env.ledger_url,
            "--set",
            "managedLedgerMaxUnackedRangesToPersist=2",
            "--set",
            "dispatcherPauseOnAckStatePersistentEnabled=true",
            "--json",
        ).stdout
    )
    assert report["ledger"]["ledgerId"] == cursor.ledger_id
    assert report["ledger"]["entriesAfterState"] == 0
    # Three ranges in memory, two persisted: the inspection shows the cap was reached.
    assert report["state"]["rangeCount"] == 2
    assert report["cap"]["atCap"] is True and report["cap"]["pauseOnAckStatePersistentEnabled"]
    assert report["znode"]["cursorsLedgerId"] == cursor.ledger_id
    missing = runner.invoke(
        cursor_app,
        [
            "inspect",
            str(cursor_env.topic),
            "nope",
            "--metadata-store",
            cursor_env.backend.metadata_url,
        ],
    )
    assert missing.exit_code == 2 and "no cursor" in missing.output
