"""`ledger-janitor`'s entry point: the whole command line, except for `ledger-janitor audit`.

The audit is what an operator (or an hourly CronJob) waits for, and its process needs none of
the sidecar's worker, the archive's tools or the cursor's: importing them all cost it half a
second (`python -X importtime`; bench.audit_small counts it in "python start, imports,
exit"). So `audit` runs in the same top-level group with that one command registered: its
options, help, usage line and errors are the whole command line's (a test compares them).
"""

from __future__ import annotations

import sys
from typing import Any

from ledger_janitor import HELP


def main(argv: list[str] | None = None) -> Any:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["audit"]:
        return audit_only_app()(args, standalone_mode=True)
    from ledger_janitor.cli import main as whole

    return whole(argv)


def audit_only_app() -> Any:
    """The top-level group with `audit` alone in it."""
    from ledger_janitor.commands.audit import audit_command
    from ledger_janitor.commands.typer_app import command_group

    app = command_group(HELP)

    @app.callback()
    def _group() -> None:  # a group, as the whole command line is: `audit` a command in it
        """Delete Apache Pulsar ledgers safely, in two phases (PIP-186)."""

    app.command("audit")(audit_command)
    return app
