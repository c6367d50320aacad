"""The `ledger-janitor` command line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from config import describe
from core.errors import JanitorError
from deletion.domain.message import (
    LedgerComponent,
    LedgerKind,
    LedgerType,
    PendingDeleteLedgerInfo,
    of_kind,
)
from deletion.domain.topics import TopicName
from ledger_janitor import HELP, __version__
from ledger_janitor.commands.archive import archive_app
from ledger_janitor.commands.audit import audit_command
from ledger_janitor.commands.console import plain_console
from ledger_janitor.commands.cursor import cursor_app
from ledger_janitor.commands.enqueue_report import report_enqueued, warn_if_not_worked
from ledger_janitor.commands.options import (
    BrokerOpt,
    ConfigFile,
    MetadataStoreOpt,
    Quiet,
    Settings,
    Verbose,
    load,
    setup_logging,
    sidecar_for,
)
from ledger_janitor.commands.typer_app import command_group

app = command_group(HELP)
config_app = command_group("Inspect the resolved configuration.")
app.add_typer(config_app, name="config")


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"ledger-janitor {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Delete Apache Pulsar ledgers safely, in two phases (PIP-186)."""


app.add_typer(archive_app, name="archive")
app.add_typer(cursor_app, name="cursor")
app.command("audit")(audit_command)


@config_app.command("show")
def config_show(
    config_file: ConfigFile = None,
    settings: Settings = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    verbose: Verbose = False,
) -> None:
    """Print every setting, its value and where the value came from."""
    setup_logging(verbose)
    rows = describe(load(config_file, settings))
    if as_json:
        typer.echo(
            json.dumps(
                [dict(zip(("key", "value", "source", "doc"), row, strict=True)) for row in rows],
                indent=2,
            )
        )
        return
    _print_settings(rows)


# Below this a four-column table cuts the keys and meanings into slivers.
TABLE_MIN_WIDTH = 120


def _print_settings(rows: list[tuple[str, str, str, str]]) -> None:
    console = plain_console()
    if console.width >= TABLE_MIN_WIDTH:
        table = Table("key", "value", "source", "meaning")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    # Narrow terminals: key=value as a properties file spells it (never wrapped, so it can be
    # copied), where it came from, then its meaning.
    for key, value, source, doc in rows:
        line = Text.assemble((key, "bold"), f"={value}", (f"  ({source})", "dim"))
        console.print(line, soft_wrap=True)
        console.print(Padding(Text(doc, style="dim"), (0, 0, 0, 4), expand=False))


@app.command()
def run(
    config_file: ConfigFile = None,
    settings: Settings = None,
    metadata_store: MetadataStoreOpt = None,
    broker_url: BrokerOpt = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Run the phase-two worker (the sidecar) until SIGTERM or Ctrl-C.

    In-flight deletions finish; anything not yet handled stays unacked for redelivery.
    Serves /metrics, /health and /ready on metricsPort.
    """
    from ledger_janitor.sidecar.run import run_sidecar

    setup_logging(verbose, quiet, default=logging.INFO)
    config = load(config_file, settings, metadata_store, broker_url).config
    if not config.two_phase_deletion_enabled:
        raise JanitorError("twoPhaseDeletionEnabled is false: nothing to run")
    run_sidecar(config)


@app.command()
def enqueue(
    topic: Annotated[
        str,
        typer.Argument(
            metavar="TOPIC", help="Topic owning the ledger: [persistent://]tenant/ns/topic."
        ),
    ],
    ledger_ids: Annotated[
        list[int], typer.Argument(metavar="LEDGER_ID", help="Ledger ids to delete.")
    ],
    component: Annotated[
        LedgerComponent | None,
        typer.Option(help="Which part of the topic owns them.  [default: MANAGED_LEDGER]"),
    ] = None,
    kind: Annotated[
        LedgerKind | None,
        typer.Option(
            help="Ledgers of another kind: COMPACTED_LEDGER (a compacted view) or "
            "DELAYED_INDEX_BUCKET (a delayed-delivery bucket snapshot), sent under their own "
            "component with ledgerKind in the message's properties. Not with --component."
        ),
    ] = None,
    skip_in_use_check: Annotated[
        bool,
        typer.Option(
            help="Set checkLedgerStillInUse=false (PIP-186's flag). The worker still checks "
            "each ledger against its topic's metadata and never deletes a ledger that metadata "
            "still references (nor one its creator may still record): the flag only makes it "
            "read that metadata afresh rather than from its cache."
        ),
    ] = False,
    config_file: ConfigFile = None,
    settings: Settings = None,
    metadata_store: MetadataStoreOpt = None,
    broker_url: BrokerOpt = None,
    verbose: Verbose = False,
) -> None:
    """Phase one by hand: enqueue delayed pending deletions for ledgers of one topic.

    Prints one line per ledger. Exit code 0: all enqueued; 3: some were not (listed;
    enqueue those again); 2: none was, or an error (one `error:` line).
    """
    parsed = TopicName.parse(topic)
    if kind is not None and component is not None:
        raise JanitorError(
            f"--kind {kind.value} is sent as {kind.component.value}: drop --component"
        )
    infos = [
        of_kind(parsed, kind, ledger_id, not skip_in_use_check)
        if kind
        else PendingDeleteLedgerInfo(
            parsed,
            component or LedgerComponent.MANAGED_LEDGER,
            LedgerType.LEDGER,
            ledger_id,
            check_ledger_still_in_use=not skip_in_use_check,
        )
        for ledger_id in ledger_ids
    ]
    with sidecar_for(config_file, settings, metadata_store, broker_url, verbose) as sidecar:
        warn_if_not_worked(parsed.namespace, sidecar.configured_namespaces())
        sent = sidecar.phase_one.enqueue_each(infos)
    report_enqueued(sent)


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
    from ledger_janitor.demo.run import run_demo

    setup_logging(verbose)
    summary = run_demo(workdir, plain_console(stderr=as_json))
    if as_json:
        typer.echo(json.dumps(summary))
    if summary["referenced_ledgers_deleted"]:
        raise typer.Exit(1)


def main(argv: list[str] | None = None) -> Any:
    return app(argv, standalone_mode=True)
