"""`ledger-janitor audit`: find orphan ledgers on Spark, report them, optionally enqueue them.

Register with `app.command("audit")(audit_command)`. This module imports neither PySpark
nor the rest of `audit` at import time: the sidecar that registers it stays small.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from core.errors import JanitorError
from ledger_janitor import install_hint
from ledger_janitor.commands.console import plain_console
from ledger_janitor.commands.options import (
    AsJson,
    BrokerOpt,
    ConfigFile,
    MetadataStoreOpt,
    Settings,
    Verbose,
    load,
    setup_logging,
)
from ledger_janitor.sidecar.reachability import PROBE_SECONDS, broker_unreachable, store_unreachable

if TYPE_CHECKING:
    from config import ServiceConfiguration

DATA_LOSS_EXIT_CODE = 3  # the audit ran and found dangling references or missing data

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$")


def parse_duration_ms(text: str) -> int:
    """`24h`, `90m`, `7d`, `3600s`, `500ms`; a bare number is seconds."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise typer.BadParameter(f"{text!r} is not a duration like 24h, 90m, 7d or 3600s")
    return int(float(match[1]) * _UNITS[match[2] or "s"])


def parse_time_ms(text: str) -> int:
    """Milliseconds since the epoch, or an ISO-8601 time (UTC unless it says otherwise)."""
    if text.strip().isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(f"{text!r} is neither epoch ms nor ISO-8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def audit_command(
    metadata_store: MetadataStoreOpt = None,
    inventory: Annotated[
        Path | None,
        typer.Option(
            "--inventory",
            metavar="FILE",
            help="Read the ledgers from JSON lines or Parquet instead of scanning the store.",
        ),
    ] = None,
    references: Annotated[
        Path | None,
        typer.Option(
            "--references",
            metavar="FILE",
            help="Read the references from JSON lines or Parquet instead of scanning metadata.",
        ),
    ] = None,
    min_age: Annotated[
        str, typer.Option("--min-age", help="Grace period: younger ledgers are never orphans.")
    ] = "24h",
    now: Annotated[
        str | None,
        typer.Option("--now", help="Judge ages as of this time (epoch ms or ISO-8601)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", metavar="DIR", help="Write the report here: Parquet and report.html."
        ),
    ] = None,
    enqueue: Annotated[
        bool,
        typer.Option("--enqueue/--dry-run", help="Send the orphans to phase one, or only report."),
    ] = False,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master", help="Spark master; default: spark-submit's, else local[*]."
        ),
    ] = None,
    metrics_file: Annotated[
        Path | None,
        typer.Option(
            "--metrics-file",
            metavar="PATH",
            help="Also write the figures in Prometheus text format (replaced whole), e.g. "
            "for node_exporter's textfile collector: a *.prom file in its directory.",
        ),
    ] = None,
    as_json: AsJson = False,
    broker_url: BrokerOpt = None,
    config_file: ConfigFile = None,
    settings: Settings = None,
    verbose: Verbose = False,
) -> None:
    """Find orphan ledgers (unreferenced, older than --min-age, attributable to a topic) on Spark.

    Dry run by default; --enqueue sends each orphan to its own namespace's deletion topic
    with checkLedgerStillInUse=true, so the worker re-checks it before deleting.

    Exit codes: 0 the audit ran and found no missing data; 2 a usage or input error (one
    `error:` line; nothing was enqueued after it), or namespaces whose deletion topic refused
    --enqueue (each on a line under the `error:` one; the other namespaces' orphans were
    enqueued); 3 the audit ran and found dangling
    references or missing offloaded data (possible data loss; see the MISSING DATA block).
    """
    started = time.monotonic()
    setup_logging(verbose)
    config = load(config_file, settings, metadata_store, broker_url).config
    min_age_ms = parse_duration_ms(min_age)
    now_ms = parse_time_ms(now) if now is not None else int(time.time() * 1000)
    try:
        from audit.run import run_command
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("pyspark", "py4j", "jinja2"):
            raise
        raise JanitorError(
            f"the audit needs PySpark and Jinja ({exc.name} is missing): " + install_hint("audit")
        ) from exc
    _preflight(config, inventory, references, metrics_file, enqueue)
    figures = run_command(
        config,
        inventory=inventory,
        references=references,
        now_ms=now_ms,
        min_age_ms=min_age_ms,
        output=output,
        enqueue=enqueue,
        spark_master=spark_master,
        out=plain_console(stderr=as_json),
        err=plain_console(stderr=True),
    )
    figures["seconds"] = round(time.monotonic() - started, 3)
    if metrics_file is not None:
        from audit.report.metrics import write_metrics

        try:
            write_metrics(metrics_file, figures, time.time(), time.monotonic() - started)
        except OSError as exc:
            raise JanitorError(f"cannot write --metrics-file {metrics_file}: {exc}") from None
    if as_json:
        typer.echo(json.dumps(figures))
    if figures["dangling"] or figures["missing_ledgers"]:
        raise typer.Exit(DATA_LOSS_EXIT_CODE)


def _preflight(
    config: ServiceConfiguration,
    inventory: Path | None,
    references: Path | None,
    metrics_file: Path | None,
    enqueue: bool,
) -> None:
    """What can be checked in a second is, before Spark starts and reads anything: the stores
    the audit scans answer, the broker if it enqueues, the metrics file's directory exists."""
    needed = []  # (what, its URL, the option that reads it from a file instead)
    if references is None:
        needed.append(("the metadata store", config.metadata_store_url, "--references"))
    if inventory is None:
        ledgers = config.bookkeeper_metadata_service_uri or config.metadata_store_url
        needed.append(("the ledger metadata store", ledgers, "--inventory"))
    for what, url, option in needed:
        problem = store_unreachable(what, url, PROBE_SECONDS)
        if problem is not None:
            raise JanitorError(f"{problem}; or read it from a file with {option} FILE")
    problem = broker_unreachable(config.broker_service_url, PROBE_SECONDS) if enqueue else None
    if problem is not None:
        raise JanitorError(f"{problem}; --enqueue needs it")
    if metrics_file is not None and not metrics_file.parent.is_dir():
        raise JanitorError(f"--metrics-file {metrics_file}: no directory {metrics_file.parent}")
    if metrics_file is not None and metrics_file.is_dir():
        raise JanitorError(f"--metrics-file {metrics_file} is a directory; name a *.prom file")
