"""What the help says is what the commands do (issue 31, the operator's leftovers): read as
an operator reads it, `ledger-janitor ... --help` in a process of its own."""

from __future__ import annotations

from harness.process import run_cli


def test_enqueue_help_says_the_worker_still_refuses_referenced_ledgers() -> None:
    """`--skip-in-use-check` read as "delete without checking"; the worker checks anyway."""
    shown = run_cli("enqueue", "--help", columns=200)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    option = text[text.index("--skip-in-use-check") :]
    assert "checkLedgerStillInUse=false" in option
    assert "never deletes a ledger that metadata still references" in option
