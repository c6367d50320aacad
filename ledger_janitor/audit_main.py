"""The audit on its own: `python -m ledger_janitor.audit_main [OPTIONS]`, or on a cluster
`spark-submit --master URL --py-files janitor.zip ledger_janitor/audit_main.py [OPTIONS]`
(the zip holding this project's packages, and the nodes having its dependencies)."""

from __future__ import annotations

from ledger_janitor.commands.audit import audit_command
from ledger_janitor.commands.typer_app import ReportingCommand, command_group


def main() -> None:
    app = command_group()
    app.command("audit", cls=ReportingCommand)(audit_command)
    app(prog_name="ledger-janitor-audit")


if __name__ == "__main__":
    main()
