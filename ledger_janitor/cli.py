"""The `ledger-janitor` command line."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from config import CONFIG_FILE_ENV, LoadedConfiguration, describe, load_configuration
from deletion.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.topics import TopicName

from .errors import JanitorError

app = typer.Typer(
    help="Delete Apache Pulsar ledgers safely, in two phases (PIP-186).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")
err = Console(stderr=True)

ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help=f"Pulsar-style properties file (or ${CONFIG_FILE_ENV}).",
        envvar=CONFIG_FILE_ENV,
        show_default=False,
    ),
]
Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        metavar="KEY=VALUE",
        help="Override a setting, e.g. --set sendDelaySecondsOfTwoPhaseDeletion=5.",
    ),
]
MetadataStoreOpt = Annotated[
    str | None,
    typer.Option(
        "--metadata-store", help="metadataStoreUrl: zk:host:port[/chroot] or sqlite:PATH."
    ),
]
BrokerOpt = Annotated[
    str | None, typer.Option("--broker-url", help="brokerServiceUrl, pulsar://host:port.")
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Log every message handled.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Log warnings and errors only.")]


def _setup_logging(verbose: bool) -> None:
    level = logging.INFO if verbose else logging.WARNING
    handler: logging.Handler = RichHandler(console=err, show_path=False)
    if not sys.stderr.isatty():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("pulsar").setLevel(logging.WARNING)


def _load(
    config_file: Path | None,
    settings: list[str] | None,
    metadata_store: str | None = None,
    broker_url: str | None = None,
) -> LoadedConfiguration:
    overrides: dict[str, str] = {}
    for item in settings or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        overrides[key.strip()] = value.strip()
    if metadata_store is not None:
        overrides["metadataStoreUrl"] = metadata_store
    if broker_url is not None:
        overrides["brokerServiceUrl"] = broker_url
    return load_configuration(config_file, os.environ, overrides)


@config_app.command("show")
def config_show(
    config_file: ConfigFile = None,
    settings: Settings = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print every setting, its value and where the value came from."""
    rows = describe(_load(config_file, settings))
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
    """
    from .wiring import open_sidecar

    _setup_logging(verbose=not quiet)
    config = _load(config_file, settings, metadata_store, broker_url).config
    if not config.two_phase_deletion_enabled:
        raise JanitorError("twoPhaseDeletionEnabled is false: nothing to run")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    sidecar = open_sidecar(config)
    try:
        worker = sidecar.worker()
        worker.start()
        err.print(
            "ledger-janitor: worker running on "
            + (", ".join(map(str, worker.subscribed)) or "no namespaces yet")
        )
        stop.wait()
        err.print("ledger-janitor: stopping; finishing in-flight deletions")
        worker.stop()
        err.print(f"ledger-janitor: stopped: {worker.stats}")
    finally:
        sidecar.close()


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
    from .wiring import open_sidecar

    _setup_logging(False)
    config = _load(config_file, settings, metadata_store, broker_url).config
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
    sidecar = open_sidecar(config)
    try:
        ids = sidecar.phase_one.enqueue(infos)
    finally:
        sidecar.close()
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

    _setup_logging(verbose)
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
