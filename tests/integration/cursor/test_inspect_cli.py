"""`cursor inspect` as an operator runs it: on the demo's SQLite store, and on a real
ZooKeeper holding BookKeeper's ledger metadata; and the cursor commands' help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer

from cursor import CursorMetadata
from cursor.wire import CursorInfoContent, WireRanges
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import zookeeper_backend
from harness.process import run_cli
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.commands.cursor import cursor_app
from ledger_janitor.demo.seeding import TopicSeeder

ROOT = Path(__file__).resolve().parents[3]


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("cursor", "inspect", *args)


def test_inspect_on_the_demos_store_shows_the_znode_and_the_empty_ledger(
    tmp_path: Path,
) -> None:
    # The demo's store: one SQLite file, its cursors' ledgers created and never written.
    store_file = tmp_path / "janitor.db"
    metadata, ledgers = SqliteMetadataStore(store_file), SqliteLedgerStorage(store_file)
    topic = TopicName(NamespaceName.parse("demo/orders"), "events-partition-0")
    seeded = TopicSeeder(metadata, ledgers).seed(topic, ledgers=3)
    metadata.close()
    ledgers.close()
    url = f"sqlite:{store_file}"
    shown = inspect("demo/orders/events-partition-0", "sub", "--metadata-store", url)
    # Today: `error: cursor ledger 73 holds no complete state`, rc 2, the znode not shown.
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    lines = shown.stdout.splitlines()
    assert f"  cursorsLedgerId: {seeded.cursor_ledger}" in lines
    assert f"ledger {seeded.cursor_ledger}:" in lines
    assert "  pulsar/cursor: sub" in lines
    assert "  the ledger has no entries: no state was ever written to it" in lines
    report = json.loads(
        inspect("demo/orders/events-partition-0", "sub", "--metadata-store", url, "--json").stdout
    )
    assert report["znode"]["cursorsLedgerId"] == seeded.cursor_ledger
    assert report["ledger"]["lastEntryId"] == -1 and report["state"] is None
    assert report["ledger"]["metadata"]["customMetadata"]["pulsar/cursor"] == "sub"


def test_inspect_on_zookeeper_shows_bookkeepers_ledger_metadata(
    zookeeper: ZooKeeperServer, chroot: str
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot, first_ledger_id=3_000_000_000)
    try:
        topic = TopicName(NamespaceName.parse("public/default"), "orders")
        custom = pulsar_custom_metadata(topic, LedgerComponent.MANAGED_CURSOR, "my-sub")
        ledger_id = backend.factory.create_ledger(custom)
        # A cursor as a broker leaves it: its ledger, and a few ranges kept in the znode.
        ranges = WireRanges.of_runs(np.array([7, 7]), np.array([2, 5]), np.array([2, 6]))
        info = CursorInfoContent(
            cursors_ledger_id=ledger_id,
            mark_delete=None,
            ranges=ranges,
            properties={"p": 1},
            last_active=1_700_000_000_000,
        )
        CursorMetadata(backend.metadata, topic, "my-sub").create(info)
        CursorMetadata(backend.metadata, topic, "gone").create(
            CursorInfoContent(cursors_ledger_id=ledger_id + 1)
        )
    finally:
        backend.ledgers.close()
    url = backend.metadata_url
    report = json.loads(
        inspect("public/default/orders", "my-sub", "--metadata-store", url, "--json").stdout
    )
    znode = report["znode"]
    assert znode["cursorsLedgerId"] == ledger_id and znode["acked"] == [[7, 2, 2], [7, 5, 6]]
    assert znode["properties"] == {"p": 1} and znode["lastActive"] == 1_700_000_000_000
    ledger = report["ledger"]
    # Today: {"ledgerId": ..., "readable": false}, nothing else.
    meta = ledger["metadata"]
    assert meta["state"] == "CLOSED" and meta["ensembleSize"] == 2
    assert meta["ensembles"] == [{"firstEntryId": 0, "bookies": ["bookie-1:3181", "bookie-2:3181"]}]
    assert meta["customMetadata"]["pulsar/cursor"] == "my-sub" and meta["ctime"] > 0
    assert ledger["readable"] is False and "entries are on the bookies" in ledger["why"]
    assert report["state"] is None and report["cap"]["atCap"] is None
    shown = inspect("public/default/orders", "my-sub", "--metadata-store", url)
    assert shown.returncode == 0 and shown.stderr == ""
    assert "  CLOSED, ensemble 2, write quorum 2, ack quorum 2\n" in shown.stdout
    assert "  inline ranges: 2 ranges (2 runs)" in shown.stdout
    assert "  lastActive: 2023-11-14T22:13:20Z" in shown.stdout
    assert shown.stdout.endswith("cap: unknown (the state is in the ledger, not read here)\n")
    missing = json.loads(
        inspect("public/default/orders", "gone", "--metadata-store", url, "--json").stdout
    )
    assert missing["ledger"]["metadata"] is None
    assert missing["ledger"]["why"].startswith(f"ledger {ledger_id + 1} is not in the ledger store")


def _options(command: Any) -> list[typer.core.TyperOption]:
    return [p for p in command.params if isinstance(p, typer.core.TyperOption)]


@pytest.mark.parametrize("name", ["decode", "encode", "inspect"])
def test_every_cursor_option_has_help(name: str) -> None:
    group = typer.main.get_command(cursor_app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands[name]
    # Today: inspect's --config/-c and --set/-s have none.
    assert all(option.help for option in _options(command)), [
        option.name for option in _options(command) if not option.help
    ]
    assert all(p.help for p in command.params if isinstance(p, typer.core.TyperArgument))


def test_inspect_help_explains_config_and_set() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "ledger_janitor", "cursor", "inspect", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    ).stdout
    assert "Properties file" in shown and "Override a setting" in shown
