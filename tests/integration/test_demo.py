"""`ledger-janitor demo --workdir DIR` as a person runs it, twice, then audits what it left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from ledger_janitor.demo.seeding import store_references


def demo(workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ledger_janitor", "demo", "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )


def test_the_demo_counts_what_it_seeds_leaves_nothing_unreferenced_and_runs_again(
    tmp_path: Path,
) -> None:
    workdir = tmp_path / "demo"
    first = demo(workdir)
    assert first.returncode == 0, first.stderr
    # 9 topics x 6 data ledgers, 9 cursors, and one schema per topic: the two partitions of
    # `events` share theirs, as in Pulsar (it said "72 ledgers", and left 3 schema ledgers
    # that nothing referenced once each partition had overwritten the other's locator).
    assert (
        "seeded 9 topics in 3 namespaces: 54 data, 9 cursor and 6 schema ledgers "
        "(69 in the store;" in first.stdout
    )
    assert "9 cursors moved to a new ledger, 78 ledgers in the store now" in first.stdout
    # The garbage message's reason, in words (it was "IndexError: list index out of range").
    assert (
        "archived: undecodable message: not an Avro PendingDeleteLedgerInfo (9 bytes): "
        "a union branch or enum symbol number out of range" in first.stdout
    )
    assert "Error" not in first.stdout
    assert "left in the store: 42 ledgers; unreferenced by any metadata: none" in first.stdout

    # An audit's view of what is left: every ledger in the store is referenced by metadata.
    metadata = SqliteMetadataStore(str(workdir / "janitor.db"))
    ledgers = SqliteLedgerStorage(str(workdir / "janitor.db"))
    try:
        left = set(ledgers.ledger_ids())
        assert len(left) == 42 and left <= store_references(metadata)
    finally:
        ledgers.close()
        metadata.close()

    again = demo(workdir)  # it said "... already exists"
    assert again.returncode == 0, again.stderr
    assert "removed the previous demo's files: janitor.db, broker" in again.stdout
    assert "referenced ledgers deleted: 0 of 42" in again.stdout


def test_a_workdir_holding_files_no_demo_left_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "janitor.db").write_bytes(b"someone's store")
    refused = demo(tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"error: {tmp_path} holds janitor.db that no demo left there: "
        "pass another --workdir (the demo creates it)"
    ]
    assert (tmp_path / "janitor.db").read_bytes() == b"someone's store"
