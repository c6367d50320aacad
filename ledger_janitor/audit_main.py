"""The audit on its own: `python -m ledger_janitor.audit_main [OPTIONS]`, or on a cluster
`spark-submit --master URL --py-files janitor.zip ledger_janitor/audit_main.py [OPTIONS]`
(the zip holding this project's packages, and the nodes having its dependencies)."""

from __future__ import annotations

import sys

import typer

from core.errors import JanitorError
from ledger_janitor.audit_cli import audit_command
from ledger_janitor.console import print_error


def main() -> None:
    app = typer.Typer(
        rich_markup_mode=None,  # help texts show [brackets] literally
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.command("audit")(audit_command)
    try:
        app(prog_name="ledger-janitor-audit")
    except JanitorError as exc:
        print_error(exc)
        sys.exit(2)


if __name__ == "__main__":
    main()
