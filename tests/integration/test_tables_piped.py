"""Every other table the CLI prints, read through a pipe as a pod's log or `2>file` reads it:
no value cut to `namesp…`, one row a line. (`archive list|drain`: test_archive_cli.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.process import run_cli

TENANT = "tenant-of-the-european-payments-platform-team"
NAMESPACE = f"{TENANT}/settlements-and-reconciliation-archive"


def piped(*args: str) -> subprocess.CompletedProcess[str]:
    """No terminal, and no COLUMNS to go by."""
    return run_cli(*args, columns=None, timeout=300)


def test_config_show_off_a_terminal_prints_every_setting_whole_on_its_line() -> None:
    shown = piped("config", "show")
    settings = json.loads(piped("config", "show", "--json").stdout)
    assert shown.returncode == 0, shown.stderr
    assert "…" not in shown.stdout
    lines = shown.stdout.splitlines()
    for setting in settings:
        (row,) = [line for line in lines if line.startswith(f"│ {setting['key']} ")]
        assert setting["doc"] in row and setting["source"] in row


def test_the_audit_summary_off_a_terminal_names_each_namespace_whole(tmp_path: Path) -> None:
    old = 1_700_000_000_000 - 9 * 86_400_000
    inventory = tmp_path / "inventory.jsonl"
    inventory.write_text(
        "".join(
            json.dumps(
                {
                    "ledger_id": ledger_id,
                    "ctime_ms": old,
                    "custom_metadata": {
                        "application": "pulsar",
                        "component": "managed-ledger",
                        "pulsar/managed-ledger": f"{NAMESPACE}/persistent/{topic}",
                    },
                    "size": 1_000,
                }
            )
            + "\n"
            for ledger_id, topic in ((1, "orders"), (2, "orders"), (3, "refunds"))
        )
    )
    references = tmp_path / "references.jsonl"
    references.write_text(json.dumps({"ledger_id": 1, "topic": f"{NAMESPACE}/orders"}) + "\n")
    audited = piped(
        "audit", "--inventory", str(inventory), "--references", str(references),
        "--now", "1700000000000", "--metadata-store", "sqlite:/nonexistent/janitor.db",
    )  # fmt: skip
    assert audited.returncode == 0, audited.stderr
    assert "…" not in audited.stdout
    (row,) = [line for line in audited.stdout.splitlines() if NAMESPACE in line]
    assert "MANAGED_LEDGER" in row
