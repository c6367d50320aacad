"""Options every command shares, and loading the configuration they describe."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import pulsar
import typer

from config import CONFIG_FILE_ENV, LoadedConfiguration, load_configuration
from core.errors import ConfigurationError, JanitorError
from ledger_janitor import logs
from ledger_janitor.sidecar.reachability import PROBE_SECONDS, unreachable
from transport import client as broker

if TYPE_CHECKING:
    from ledger_janitor.sidecar.wiring import Sidecar

ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        metavar="FILE",
        help=f"Properties file, e.g. the broker's own broker.conf (or ${CONFIG_FILE_ENV}).",
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
        "--metadata-store",
        metavar="URL",
        help="metadataStoreUrl: zk:host:port[/chroot], etcd:http://host:port or sqlite:PATH.",
    ),
]
BrokerOpt = Annotated[
    str | None,
    typer.Option("--broker-url", metavar="URL", help="brokerServiceUrl, pulsar://host:port."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
# The same two flags on every command that logs (on stderr). Without them `run` logs INFO (a
# line per message handled) and the one-shot commands warnings and errors only.
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Log debug lines too, e.g. the keys of a properties file that are not ours.",
    ),
]
Quiet = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Log warnings and errors only, and the start-up line."),
]


def setup_logging(
    verbose: bool = False, quiet: bool = False, default: int = logging.WARNING
) -> None:
    if verbose and quiet:
        raise ConfigurationError("--verbose and --quiet contradict each other: choose one")
    logs.configure(logging.DEBUG if verbose else logging.WARNING if quiet else default)


@contextmanager
def sidecar_for(
    config_file: Path | None,
    settings: list[str] | None,
    metadata_store: str | None,
    broker_url: str | None,
    verbose: bool = False,
) -> Iterator[Sidecar]:
    """A short-lived sidecar (stores, client, producers) for one command, then closed."""
    from ledger_janitor.sidecar.wiring import open_sidecar

    setup_logging(verbose)
    config = load(config_file, settings, metadata_store, broker_url).config
    # Seconds, not the clients' 30 s of retries, to say which one is not there.
    problem = unreachable(config, PROBE_SECONDS)
    if problem is not None:
        raise JanitorError(problem)
    sidecar = open_sidecar(config)
    try:
        yield sidecar
    except pulsar.PulsarException as exc:
        raise broker.translate(exc, "the broker") from exc
    finally:
        sidecar.close()


def parse_settings(items: Iterable[str]) -> dict[str, str]:
    """`--set KEY=VALUE` options as overrides; a later KEY wins, as on any command line."""
    overrides: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        overrides[key.strip()] = value.strip()
    return overrides


def load(
    config_file: Path | None,
    settings: list[str] | None,
    metadata_store: str | None = None,
    broker_url: str | None = None,
) -> LoadedConfiguration:
    overrides = parse_settings(settings or [])
    if metadata_store is not None:
        overrides["metadataStoreUrl"] = metadata_store
    if broker_url is not None:
        overrides["brokerServiceUrl"] = broker_url
    return load_configuration(config_file, os.environ, overrides)
