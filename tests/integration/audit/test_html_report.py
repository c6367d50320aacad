"""A real audit run with `--output` writes report.html, and headless Chromium shows the right
numbers in it: from files (every figure, row and order checked) and from a real ZooKeeper.

The expected values are this file's own: counts from what it planted, sizes and times
formatted here, not by the audit's code.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName
from harness.chromium import dump_dom
from harness.dom import RenderedPage, read_dom
from harness.janitor import chrooted
from harness.zookeeper import ZooKeeperServer
from tests.integration.audit.planting import ZkLedgers
from tests.integration.audit.test_end_to_end import cli_app

NOW = 1_700_000_000_000
DAY = 86_400_000
HOSTILE_LOCAL = "<script>document.title='pwned'"  # no '/': a topic's local name cannot hold one
HOSTILE_DANGLING = "a/b/<img src=x onerror=alert(1)>"
ORPHANS = 25  # of a/b/orders: more than the page lists
DANGLING = 999


def utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def managed_ledger(ledger_id: int, ctime: int, name: str, size: int | None) -> dict[str, object]:
    metadata = {"application": "pulsar", "component": "managed-ledger",
                "pulsar/managed-ledger": name}  # fmt: skip
    return {"ledger_id": ledger_id, "ctime_ms": ctime, "custom_metadata": metadata, "size": size}


def orphan_ages() -> dict[int, int]:
    """Ledger 100 + i is 10 to 34 days old, in a shuffled order."""
    return {100 + i: NOW - (10 + i * 7 % ORPHANS) * DAY for i in range(ORPHANS)}


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    # Java's URLEncoder, as Pulsar spells a local name in the ledger's metadata.
    hostile = "a/c/persistent/" + urllib.parse.quote_plus(HOSTILE_LOCAL, safe="*")
    inventory = [managed_ledger(i, NOW - 50 * DAY, "a/b/persistent/orders", 7) for i in (1, 2, 3)]
    inventory += [
        managed_ledger(i, ctime, "a/b/persistent/orders", 1000 * (i - 99))
        for i, ctime in orphan_ages().items()
    ]
    inventory.append(managed_ledger(150, NOW - 100 * DAY, hostile, None))
    inventory.append(managed_ledger(200, NOW - 3_600_000, "a/b/persistent/orders", 5))
    inventory.append({"ledger_id": 300, "ctime_ms": NOW - 40 * DAY, "custom_metadata": {}})
    references: list[dict[str, object]] = [
        {"ledger_id": i, "topic": "a/b/orders", "component": "MANAGED_LEDGER"} for i in (1, 2, 3)
    ]
    references.append(
        {"ledger_id": DANGLING, "topic": HOSTILE_DANGLING, "component": "MANAGED_LEDGER"}
    )
    references.append({"ledger_id": 8, "topic": "a/b/orders", "bookkeeper_deleted": True})
    return (
        write_jsonl(tmp_path / "inventory.jsonl", inventory),
        write_jsonl(tmp_path / "references.jsonl", references),
    )


def audit(*args: str) -> str:
    result = CliRunner().invoke(cli_app(), ["audit", "--now", str(NOW), *args])
    assert result.exit_code == 3, result.output + repr(result.exception)  # dangling: 3
    return result.stdout


def shown(report: Path) -> RenderedPage:
    run = dump_dom(report / "report.html")
    assert run.survivors == []
    return read_dom(run.stdout)


def test_an_audit_from_files_writes_a_page_chromium_shows_right(
    spark: SparkSession, planted: tuple[Path, Path], tmp_path: Path
) -> None:
    inventory, references = planted
    report = tmp_path / "report"
    stdout = audit("--inventory", str(inventory), "--references", str(references),
                   "--metadata-store", "sqlite:/nonexistent/janitor.db", "--min-age", "7d",
                   "--output", str(report))  # fmt: skip
    assert f"report written to {report}; open {report / 'report.html'}" in stdout

    page = shown(report)
    orphan_bytes = sum(1000 * (i - 99) for i in orphan_ages())  # 325,000 B
    assert page.figures == {
        "ledgers": "31",
        "referenced": "5",  # 1, 2, 3, the dangling one, the offloaded one
        "orphans": "26",
        "orphan bytes (known)": f"{orphan_bytes / 1024:.1f} KiB",
        "dangling references": "1",
        "unattributable": "0",
        "foreign": "1",
        "young": "1",
        "unknown": "0",
    }
    assert f"As of {utc(NOW)} UTC; grace period 7 d" in page.text
    oldest_orders = min(orphan_ages().values())
    # Orphans first, the namespace with the most bytes first; young ones last.
    assert page.tables["summary"] == [
        ["orphan", "a/b", "MANAGED_LEDGER", "25", "317.4 KiB", "25", utc(oldest_orders)],
        ["orphan", "a/c", "MANAGED_LEDGER", "1", "-", "0", utc(NOW - 100 * DAY)],
        ["foreign", "-", "-", "1", "-", "0", utc(NOW - 40 * DAY)],
        ["young", "a/b", "MANAGED_LEDGER", "1", "5 B", "1", utc(NOW - 3_600_000)],
    ]
    assert page.tables["totals"] == [
        ["orphan", "26", "317.4 KiB", "25"],
        ["unattributable", "0", "-", "0"],
        ["foreign", "1", "-", "0"],
        ["young", "1", "5 B", "1"],
        ["unknown", "0", "-", "0"],
    ]
    assert page.tables["reclaimable"] == [["a/b", "25", "317.4 KiB"], ["a/c", "1", "0 B"]]
    # 20 of a/b/orders' are 10 to 29 days old, 5 are 30 to 34; the hostile one is 100 days old.
    assert page.tables["orphan-ages"] == [
        ["7 d to 30 d", "20"], ["30 d to 90 d", "5"], ["90 d to 365 d", "1"], ["over 365 d", "0"],
    ]  # fmt: skip
    assert page.elements["svg"] == 2 and page.elements["rect"] == 2 + 4
    assert "a/b 317.4 KiB" in page.sections["reclaimable"]  # the bar's label and value
    # The largest first: ledger 124 holds 25,000 B; ledger 150's size is unknown.
    largest = page.tables["largest-orphans"]
    assert [row[0] for row in largest] == [str(i) for i in range(124, 104, -1)]
    assert largest[0][1:] == ["a/b/orders", "MANAGED_LEDGER", utc(orphan_ages()[124]),
                              f"{(NOW - orphan_ages()[124]) // DAY} d", "24.4 KiB"]  # fmt: skip
    assert "Showing 20 of 25;" in page.sections["largest-orphans"]
    # The oldest first: the hostile one (100 days), then a/b/orders' by age.
    by_age = sorted(orphan_ages().items(), key=lambda item: item[1])[:19]
    listed = page.tables["oldest-orphans"]
    assert listed[0] == ["150", f"a/c/{HOSTILE_LOCAL}", "MANAGED_LEDGER", utc(NOW - 100 * DAY),
                         "100 d", "-"]  # fmt: skip
    assert [row[0] for row in listed[1:]] == [str(i) for i, _ in by_age]
    # Ledger 107 (i = 7: 7 * 7 % 25 = 24) is 34 days old and holds 8,000 B.
    assert listed[1] == ["107", "a/b/orders", "MANAGED_LEDGER", utc(NOW - 34 * DAY), "34 d",
                         "7.8 KiB"]  # fmt: skip
    assert "Showing 20 of 26;" in page.sections["oldest-orphans"]
    assert page.tables["dangling"] == [[str(DANGLING), HOSTILE_DANGLING, "MANAGED_LEDGER"]]
    assert page.elements["script"] == 0 and page.elements["img"] == 0 and page.handlers == []
    assert "pwned" not in page.title
    assert json.loads((report / "audit.json").read_text())["orphans"] == 26  # beside it


@pytest.fixture
def zk_store(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[ZooKeeperMetadataStore]:
    store = chrooted(zookeeper.hosts, chroot)
    yield store
    store.close()


def test_an_audit_of_zookeeper_writes_a_page_chromium_shows_right(
    spark: SparkSession,
    zk_store: ZooKeeperMetadataStore,
    zookeeper: ZooKeeperServer,
    chroot: str,
    tmp_path: Path,
) -> None:
    orders = TopicName(NamespaceName("t1", "ns"), "orders")
    ml = LedgerComponent.MANAGED_LEDGER
    ledgers = ZkLedgers(zk_store)
    kept = [ledgers.of(orders, ml, ctime_ms=NOW - 20 * DAY, length=100) for _ in range(2)]
    leaked = ledgers.of(orders, ml, ctime_ms=NOW - 9 * DAY, length=3 * 1024 * 1024)
    older = ledgers.of(orders, ml, ctime_ms=NOW - 12 * DAY, length=2048)
    ledgers.of(orders, ml, ctime_ms=NOW - 3_600_000, length=1)  # young
    ManagedLedgerWriter(zk_store).write(orders, [*kept, DANGLING], version=None)
    report = tmp_path / "report"

    stdout = audit("--metadata-store", f"zk:{zookeeper.hosts}{chroot}", "--output", str(report))

    assert f"open {report / 'report.html'}" in stdout
    page = shown(report)
    assert {k: page.figures[k] for k in ("ledgers", "referenced", "orphans", "young")} == {
        "ledgers": "5",
        "referenced": "3",
        "orphans": "2",
        "young": "1",
    }
    assert page.figures["orphan bytes (known)"] == "3.0 MiB"  # 3 MiB + 2 KiB
    assert page.tables["oldest-orphans"] == [
        [str(older), "t1/ns/orders", "MANAGED_LEDGER", utc(NOW - 12 * DAY), "12 d", "2.0 KiB"],
        [str(leaked), "t1/ns/orders", "MANAGED_LEDGER", utc(NOW - 9 * DAY), "9 d", "3.0 MiB"],
    ]
    assert page.tables["dangling"] == [[str(DANGLING), "t1/ns/orders", "MANAGED_LEDGER"]]
