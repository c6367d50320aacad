"""`ledger-janitor archive list|drain`: what phase two gave up on, and settling it now."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from consumers.archive import ArchivedMessage, DrainFilter, discover_archive_namespaces
from consumers.archive_listing import by_ledger, list_archives
from core.errors import ConfigurationError
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName
from ledger_janitor.commands.archive_tables import (
    Settled,
    archived_table,
    drain_summary,
    drained_table,
)
from ledger_janitor.commands.console import count, plain_console, plural
from ledger_janitor.commands.options import (
    AsJson,
    BrokerOpt,
    ConfigFile,
    MetadataStoreOpt,
    Settings,
    Verbose,
    sidecar_for,
)
from ledger_janitor.commands.typer_app import command_group
from ledger_janitor.sidecar.wiring import Sidecar, safety_margins

archive_app = command_group("The archive of deletions phase two gave up on: list it, drain it.")
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        help="tenant/namespace. Without it: those of deletionNamespaces when it is set, "
        "else every namespace that has a deletion or archive topic.",
    ),
]
Wait = Annotated[
    float,
    typer.Option(
        min=0,
        metavar="SECONDS",
        help="Seconds without a new message before the archive counts as read.",
    ),
]


def _namespaces(sidecar: Sidecar, namespace: str | None) -> list[NamespaceName]:
    """The one named; else the sidecar's own (deletionNamespaces, when set); else every one
    known, the archives of deleted deletion topics too. List and drain read the same set."""
    if namespace:
        return [NamespaceName.parse(namespace)]
    if sidecar.configured_namespaces():
        return sidecar.configured_namespaces()
    return sorted({*sidecar.namespaces(), *discover_archive_namespaces(sidecar.metadata)})


def _none_known(store: str) -> str:
    return (
        f"no namespace has a deletion or archive topic in {store}, and deletionNamespaces "
        "is empty: pass --namespace tenant/namespace"
    )


@archive_app.command("list")
def list_command(
    namespace: NamespaceOpt = None,
    as_json: AsJson = False,
    wait: Wait = 2.0,
    config_file: ConfigFile = None,
    settings: Settings = None,
    metadata_store: MetadataStoreOpt = None,
    broker_url: BrokerOpt = None,
    verbose: Verbose = False,
) -> None:
    """Show what is archived and why, without consuming it; without --namespace, in every
    namespace that has a deletion or archive topic."""
    with sidecar_for(config_file, settings, metadata_store, broker_url, verbose) as sidecar:
        namespaces = _namespaces(sidecar, namespace)
        found = _read_archives(sidecar, namespaces, wait)
        store = sidecar.config.metadata_store_url
    messages = [m for ns in namespaces for m in found[ns]]
    rows = by_ledger(messages)
    if as_json:
        typer.echo(json.dumps([row.as_json() for row in rows]))
        return
    console = plain_console()
    if not namespaces:
        console.print(_none_known(store), soft_wrap=True)
        return
    checked = ", ".join(map(str, namespaces))
    if not rows:
        console.print(f"nothing archived in {checked}", soft_wrap=True)
        return
    per_namespace = Counter(str(row.latest.namespace) for row in rows)
    title = (
        f"{count(len(rows))} archived in {count(len(per_namespace))} of "
        f"{plural(len(namespaces), 'namespace')}"
    )
    if len(messages) != len(rows):
        title += f" ({plural(len(messages), 'message')}: a ledger archived again is one row)"
    console.print(archived_table(rows, title))
    counts = ", ".join(f"{ns} {count(n)}" for ns, n in sorted(per_namespace.items()))
    console.print(f"archived per namespace: {counts}; checked: {checked}", soft_wrap=True)


def _read_archives(
    sidecar: Sidecar, namespaces: list[NamespaceName], wait: float
) -> dict[NamespaceName, list[ArchivedMessage]]:
    """Every archive at once; on a terminal, how far it got on stderr meanwhile (the tables
    go to stdout; off a terminal nothing is shown: the wait is bounded by --wait)."""
    shown = plain_console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        MofNCompleteColumn(),
        TextColumn("namespaces read, {task.fields[messages]} messages so far"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=shown, transient=True, disable=not shown.is_terminal) as bar:
        task = bar.add_task("reading the archives:", total=len(namespaces), messages=0)
        lock = threading.Lock()
        received = [0]

        def one_message(_: NamespaceName) -> None:
            with lock:
                received[0] += 1
                bar.update(task, messages=received[0])

        return list_archives(
            sidecar.client, namespaces, wait, one_message, lambda _: bar.advance(task)
        )


@archive_app.command("drain")
def drain_command(
    namespace: NamespaceOpt = None,
    reason: Annotated[
        str | None, typer.Option(help="Only messages whose reason contains this.")
    ] = None,
    component: Annotated[
        LedgerComponent | None, typer.Option(help="Only this ledger component.")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Settle at most this many, in all.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would happen; change nothing.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: AsJson = False,
    wait: Wait = 2.0,
    config_file: ConfigFile = None,
    settings: Settings = None,
    metadata_store: MetadataStoreOpt = None,
    broker_url: BrokerOpt = None,
    verbose: Verbose = False,
) -> None:
    """Re-check archived messages now: delete what is safe, requeue what may become safe
    (with a fresh attempt count), archive the rest again with the new reason. Without
    --namespace, in every namespace `archive list` reads."""
    if not (dry_run or yes) and not sys.stdin.isatty():
        raise ConfigurationError("drain changes the archive: pass --yes (or --dry-run)")
    with sidecar_for(config_file, settings, metadata_store, broker_url, verbose) as sidecar:
        targets = _namespaces(sidecar, namespace)
        if not targets:
            raise ConfigurationError(_none_known(sidecar.config.metadata_store_url))
        named = ", ".join(map(str, targets))
        if not (dry_run or yes):
            typer.confirm(f"Drain the archive of {named}?", abort=True)
        settled = _drain(sidecar, targets, reason, component, limit, dry_run, wait)
    counts = Counter(outcome.value for _, outcome, _ in settled)
    if as_json:
        rows = [{**a.as_json(), "outcome": o.value, "new_reason": r} for a, o, r in settled]
        summary = {
            "namespaces": [str(ns) for ns in targets],
            "dry_run": dry_run,
            "counts": dict(counts),
            "messages": rows,
        }
        typer.echo(json.dumps(summary))
        return
    console = plain_console()
    if not settled:
        console.print(f"nothing to drain in {named}", soft_wrap=True)
        return
    # A dry run says "would" on every line: its title, each message's outcome, its summary.
    headline = f"would drain {named} (dry run: nothing changed)" if dry_run else f"drained {named}"
    console.print(drained_table(settled, headline, dry_run))
    console.print(drain_summary(settled, named, dry_run), soft_wrap=True)


def _drain(
    sidecar: Sidecar,
    targets: list[NamespaceName],
    reason: str | None,
    component: LedgerComponent | None,
    limit: int | None,
    dry_run: bool,
    wait: float,
) -> Settled:
    settled: Settled = []
    drain = sidecar.archive_drain()
    shown = plain_console(stderr=True)
    _settle(sidecar, shown)
    with Progress(console=shown, transient=True, disable=not shown.is_terminal) as progress:
        for target in targets:
            left = None if limit is None else limit - len(settled)
            if left == 0:
                break
            only = DrainFilter(reason, component.value if component else None, left)
            doing = "checking (dry run)" if dry_run else "draining"
            task = progress.add_task(f"{doing} {target}", total=left)
            settled += drain.drain(
                target, only, dry_run, wait, lambda *_, t=task: progress.advance(t)
            )
    return settled


def _settle(sidecar: Sidecar, shown: Console) -> None:
    """With the age rule on, nothing is decided on a connection younger than
    metadataStoreSessionTimeoutMillis (DeletionHandler: writes held up by a ZooKeeper outage
    may still land). A drain just connected waits that out rather than requeue everything."""
    margins = safety_margins(sidecar.config)
    left = margins.settle_after(sidecar.session().since) - time.time()
    if left > 0:
        shown.print(
            f"waiting {left:.0f} s for the metadata store's connection to settle "
            "(metadataStoreSessionTimeoutMillis)",
            soft_wrap=True,
        )
        time.sleep(left)
