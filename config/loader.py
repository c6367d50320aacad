"""Layer defaults, a properties file, the environment and CLI flags into one configuration.

The properties file may be the broker's own `broker.conf`, read as the broker reads it
(apache/pulsar `pulsar-broker-common/.../broker/ServiceConfiguration.java`, and its
`FieldParser.update`): a blank value leaves a setting at its default; `zookeeperServers`
stands for `zk:<its value>` when `metadataStoreUrl` is blank or absent
(`getMetadataStoreUrl`); `brokerServiceUrl` and `webServiceUrl`, when the file leaves them
unset, are the broker's own, from its ports and advertised address (config/broker_urls.py);
the broker's other keys are none of ours and are ignored. Our own keys stay strict: an
unknown key close to one of ours is a typo and fails.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import javaproperties

from config.broker_keys import BROKER_KEYS
from config.broker_urls import broker_urls
from config.fields import FieldSpec, is_plain_boolean, one_line, typo_of, unknown_key_message
from config.settings import SPECS, ServiceConfiguration
from core.errors import ConfigurationError

log = logging.getLogger(__name__)
ENV_PREFIX: Final = "LEDGER_JANITOR_"
# Names the properties file; the CLI reads it, so the loader must not call it unknown.
CONFIG_FILE_ENV: Final = "LEDGER_JANITOR_CONFIG"
# Not settings either: ZooKeeper digest credentials (read by the ZooKeeper store, never
# shown) and the test suite's switch for its long variants.
NOT_SETTINGS: Final = frozenset(
    {
        CONFIG_FILE_ENV,
        "LEDGER_JANITOR_ZOOKEEPER_DIGEST",
        "LEDGER_JANITOR_LONG_TESTS",
        "LEDGER_JANITOR_TRACEBACK",  # the CLI prints a traceback for an unexpected error
    }
)
STORE_KEY: Final = "metadataStoreUrl"
# The broker's deprecated spelling of metadataStoreUrl: a ZooKeeper connect string.
ZOOKEEPER_SERVERS_KEY: Final = "zookeeperServers"


def snake_case(key: str) -> str:
    """fileSystemURI -> file_system_uri: an acronym stays one word."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", key).lower()


def env_var(key: str) -> str:
    """The environment variable for a key: sendDelaySeconds -> LEDGER_JANITOR_SEND_DELAY_SECONDS."""
    return ENV_PREFIX + snake_case(key).upper()


_BY_KEY: Final = {spec.key: spec for spec in SPECS}
_BY_ENV: Final = {env_var(spec.key): spec for spec in SPECS}

# (setting, raw text, source label)
_Entry = tuple[FieldSpec, str, str]


@dataclass(frozen=True)
class LoadedConfiguration:
    """The configuration plus, per camelCase key, where its value came from."""

    config: ServiceConfiguration
    # "default", "file:<path>", "env:<VAR>" or "cli"
    sources: Mapping[str, str]

    def source_of(self, key: str) -> str:
        return self.sources.get(key, "default")


def load_configuration(
    properties_file: Path | None,
    environ: Mapping[str, str],
    overrides: Mapping[str, str],
) -> LoadedConfiguration:
    """Later sources win: defaults < properties file < environment < overrides (CLI flags).

    Every problem in every source is reported in one ConfigurationError, one per line,
    so an operator can fix them all before the next attempt.
    """
    errors: list[str] = []
    values: dict[str, Any] = {}
    sources = {spec.key: "default" for spec in SPECS}

    def apply(entries: list[_Entry]) -> None:
        for spec, raw, source in entries:
            # Reported even if a later source overrides it: the earlier source is still wrong.
            try:
                values[spec.name] = spec.coerce(raw)
            except ValueError as exc:
                errors.append(spec.bad_value(raw, source, str(exc)))
            else:
                sources[spec.key] = source
                if spec.kind == "bool" and not is_plain_boolean(raw):
                    log.warning(
                        spec.bad_value(
                            raw, source, "read as false, as Pulsar reads it: write true or false"
                        )
                    )

    # Applied in precedence order, so errors are also grouped by source, file first.
    if properties_file is not None:
        apply(_file_entries(properties_file, errors))
    apply(_env_entries(environ, errors))
    apply(_entries(overrides.items(), "cli", errors))
    if errors:
        raise ConfigurationError(one_line(errors))
    return LoadedConfiguration(ServiceConfiguration(**values), sources)


def describe(loaded: LoadedConfiguration) -> list[tuple[str, str, str, str]]:
    """(key, value for display, source, doc) per setting, in declaration order; secrets masked."""
    rows: list[tuple[str, str, str, str]] = []
    for spec in SPECS:
        shown = _display(spec, getattr(loaded.config, spec.name))
        rows.append((spec.key, shown, loaded.source_of(spec.key), spec.doc))
    return rows


def _display(spec: FieldSpec, value: object) -> str:
    # Spelled the way a properties file spells it (true/false, comma lists), not Python's way.
    if spec.secret and value:
        return "***"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def _file_entries(path: Path, errors: list[str]) -> list[_Entry]:
    try:
        # UTF-8 rather than Java's Latin-1: these files are hand-edited; \uXXXX still works.
        with path.open(encoding="utf-8") as fp:
            # A list keeps file order and duplicates, so errors read top to bottom.
            pairs: list[tuple[str, str]] = javaproperties.load(fp, object_pairs_hook=list)
    except FileNotFoundError:
        errors.append(f"properties file not found: {path}")
        return []
    except (OSError, ValueError) as exc:
        errors.append(f"cannot read properties file {path}: {exc}")
        return []
    source = f"file:{path}"
    # Blank means "not set" to the broker: `broker.conf` lists most of its keys with no value.
    given = [(key, raw) for key, raw in pairs if raw.strip()]
    ours = [(key, raw) for key, raw in given if key in _BY_KEY or _is_typo_of_ours(key)]
    found = _entries(ours, source, errors)
    zookeeper = [raw.strip() for key, raw in given if key == ZOOKEEPER_SERVERS_KEY]
    used = {key for key, _ in ours}
    if zookeeper and not any(key == STORE_KEY for key, _ in given):
        origin = f"{source}, {ZOOKEEPER_SERVERS_KEY}"
        found.append((_BY_KEY[STORE_KEY], "zk:" + zookeeper[-1], origin))
        used.add(ZOOKEEPER_SERVERS_KEY)
    values = {key: raw.strip() for key, raw in given}
    for key, derived in broker_urls(values).items():
        found.append((_BY_KEY[key], derived.url, f"{source}, {derived.origin}"))
        used.update(derived.keys)
    ignored = sorted({key for key, _ in pairs} - set(_BY_KEY) - used)
    if ignored:
        log.debug("%s: %d keys not ours, ignored: %s", path, len(ignored), ", ".join(ignored))
    return found


def _is_typo_of_ours(key: str) -> bool:
    """An unknown key in a file: the broker's own are not ours; others nearly ours are typos."""
    return key not in BROKER_KEYS and typo_of(key, list(_BY_KEY)) is not None


def _entries(pairs: Iterable[tuple[str, str]], source: str, errors: list[str]) -> list[_Entry]:
    found: list[_Entry] = []
    for key, raw in pairs:
        spec = _BY_KEY.get(key)
        if spec is None:
            errors.append(unknown_key_message(key, source, list(_BY_KEY)))
        else:
            found.append((spec, raw, source))
    return found


def _env_entries(environ: Mapping[str, str], errors: list[str]) -> list[_Entry]:
    found: list[_Entry] = []
    # Sorted so the error list does not depend on the order of the process environment.
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in NOT_SETTINGS:
            continue
        spec = _BY_ENV.get(name)
        if spec is None:
            errors.append(unknown_key_message(name, f"env:{name}", list(_BY_ENV), ENV_PREFIX))
        else:
            found.append((spec, environ[name], f"env:{name}"))
    return found
