"""The `ledger-janitor` command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from audit.cli import audit_command
from config import describe
from cursor.cli import cursor_app
from deletion.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.topics import TopicName

from .archive_cli import archive_app
from .cli_options import (
    BrokerOpt,
    ConfigFile,
    MetadataStoreOpt,
    Quiet,
    Settings,
    Verbose,
    err,
    load,
    setup_logging,
    sidecar_for,
)
from .errors import JanitorError

app = typer.Typer(
    rich_markup_mode=None,  # help texts show [brackets] literally
    help="Delete Apache Pulsar ledgers safely, in two phases (PIP-186).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(
    rich_markup_mode=None,  # help texts show [brackets] literally
    help="Inspect the resolved configuration.",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")
app.add_typer(archive_app, name="archive")
app.add_typer(cursor_app, name="cursor")
app.command("audit")(audit_command)


@config_app.command("show")
def config_show(
    config_file: ConfigFile = None,
    settings: Settings = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print every setting, its value and where the value came from."""
    rows = describe(load(config_file, settings))
    if as_json:
        typer.echo(
            json.dumps(
                [dict(zip(("key", "value", "source", "doc"), row, strict=True)) for row in rows],
                indent=2,
            )
        )
        return
    table = Table("key", "value", "source", "meaning")
    for key, value, source, doc in rows:
        table.add_row(key, value, source, doc)
    Console().print(table)


@app.command()
def run(
    config_file: ConfigFile = None,
    settings: Settings = None,
    metadata_store: MetadataStoreOpt = None,
    broker_url: BrokerOpt = None,
    quiet: Quiet = False,
) -> None:
    """Run the phase-two worker (the sidecar) until SIGTERM or Ctrl-C.

    In-flight deletions finish; anything not yet handled stays unacked for redelivery.
    Serves /metrics, /health and /ready on metricsPort.
    """
    from .sidecar_run import run_sidecar

    setup_logging(verbose=not quiet)
    config = load(config_file, settings, metadata_store, broker_url).config
    if not config.two_phase_deletion_enabled:
        raise JanitorError("twoPhaseDeletionEnabled is false: nothing to run")
    run_sidecar(config)


@app.command()
def enqueue(
    topic: Annotated[
        str, typer.Argument(help="Topic owning the ledger: [persistent://]tenant/ns/topic.")
    ],
    ledger_ids: Annotated[list[int], typer.Argument(help="Ledger ids to delete.")],
    component: Annotated[
        LedgerComponent, typer.Option(help="Which part of the topic owns them.")
    ] = (LedgerComponent.MANAGED_LEDGER),
    skip_in_use_check: Annotated[
        bool, typer.Option(help="Set checkLedgerStillInUse=false.")
    ] = False,
    config_file: ConfigFile = None,
    settings: Settings = None,
    metadata_store: MetadataStoreOpt = None,
    broker_url: BrokerOpt = None,
) -> None:
    """Phase one by hand: enqueue delayed pending deletions for ledgers of one topic."""
    parsed = TopicName.parse(topic)
    infos = [
        PendingDeleteLedgerInfo(
            parsed,
            component,
            LedgerType.LEDGER,
            ledger_id,
            check_ledger_still_in_use=not skip_in_use_check,
        )
        for ledger_id in ledger_ids
    ]
    with sidecar_for(config_file, settings, metadata_store, broker_url) as sidecar:
        ids = sidecar.phase_one.enqueue(infos)
    for info, message_id in zip(infos, ids, strict=True):
        typer.echo(f"enqueued {info.describe()} as {message_id}")


@app.command()
def demo(
    as_json: Annotated[
        bool, typer.Option("--json", help="End with one JSON object of figures.")
    ] = False,
    workdir: Annotated[
        Path | None, typer.Option(help="Keep the broker and SQLite files here.")
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Run the whole protocol on this machine: embedded broker, SQLite stores, a worker."""
    from .demo import run_demo

    setup_logging(verbose)
    summary = run_demo(workdir, Console(stderr=as_json))
    if as_json:
        typer.echo(json.dumps(summary))
    if summary["referenced_ledgers_deleted"]:
        raise typer.Exit(1)


def main(argv: list[str] | None = None) -> Any:
    try:
        return app(argv, standalone_mode=True)
    except JanitorError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        sys.exit(2)
