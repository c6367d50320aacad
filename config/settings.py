"""Every setting ledger-janitor understands: its Pulsar-style key, type, default and check."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final, Literal, TypeVar

from config.urls import STORE_URL_FORMS, check_store_url
from ledger_janitor.errors import ConfigurationError

Kind = Literal["bool", "int", "str", "enum", "namespaces", "store", "url"]
_T = TypeVar("_T")

_BOOLS: Final = dict.fromkeys(("true", "yes", "on", "1"), True) | dict.fromkeys(
    ("false", "no", "off", "0"), False
)
# Plain decimal only: int() would also take "1_000" and non-ASCII digits, which Pulsar rejects.
_INT: Final = re.compile(r"[+-]?[0-9]+")
# Pulsar's own rule for tenant and namespace names.
_NAME_PART: Final = re.compile(r"[-=:.\w]+")
COMPRESSION_TYPES: Final = ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY")


@dataclass(frozen=True)
class FieldSpec:
    """What the loader and `config show` need to know about one setting."""

    key: str
    kind: Kind
    default: object
    doc: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    schemes: tuple[str, ...] = ()
    optional: bool = False  # an empty string means "not set" rather than "invalid"
    secret: bool = False
    name: str = ""  # the attribute; filled in from the dataclass field below

    @property
    def expected(self) -> str:
        """The accepted values, phrased to follow 'expected'."""
        text = {
            "bool": "a boolean (true/false, yes/no, on/off, 1/0)",
            "int": "an integer" + ("" if self.minimum is None else f" >= {self.minimum}"),
            "str": "a string",
            "enum": "one of " + ", ".join(self.choices) + " (any case)",
            "namespaces": "a comma-separated list of tenant/namespace",
            "store": STORE_URL_FORMS,
            "url": "a URL starting with " + " or ".join(self.schemes),
        }[self.kind]
        return text + (" or empty" if self.optional else "")

    def coerce(self, raw: object) -> object:
        """Return the canonical value of `raw` (text or a native value); ValueError if unfit."""
        value = raw.strip() if isinstance(raw, str) else raw
        if self.optional and value == "":
            return value
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in _BOOLS:
                return _BOOLS[value.lower()]
        elif self.kind == "int":
            if isinstance(value, str) and _INT.fullmatch(value):
                value = int(value)
            # bool is an int subclass, but True as a thread count is always a mistake.
            if (
                isinstance(value, int)
                and not isinstance(value, bool)
                and (self.minimum is None or value >= self.minimum)
            ):
                return value
        elif self.kind == "enum":
            if isinstance(value, str) and value.upper() in self.choices:
                return value.upper()
        elif self.kind == "namespaces":
            return _namespaces(value, self.expected)
        elif isinstance(value, str):
            if self.kind == "str":
                return value
            if self.kind == "url" and any(
                value.startswith(s) and len(value) > len(s) for s in self.schemes
            ):
                return value
            if self.kind == "store":
                try:
                    check_store_url(value)
                except ValueError as exc:
                    raise ValueError(f"expected {self.expected} ({exc})") from None
                return value
        raise ValueError(f"expected {self.expected}")

    def bad_value(self, raw: object, source: str | None, problem: str) -> str:
        """One error line naming the key, the value, where it came from and what was expected."""
        shown = "***" if self.secret and raw else raw
        origin = f" (from {source})" if source else ""
        return f"{self.key}={shown!r}{origin}: {problem}"


def _namespaces(value: object, expected: str) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[object] = [p.strip() for p in value.split(",")] if value else []
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ValueError(f"expected {expected}")
    for item in items:
        tenant, _, namespace = item.partition("/") if isinstance(item, str) else ("", "", "")
        if not (_NAME_PART.fullmatch(tenant) and _NAME_PART.fullmatch(namespace)):
            raise ValueError(f"expected {expected}; {item!r} is not tenant/namespace")
    return tuple(str(item) for item in items)


def _setting(default: _T, key: str, kind: Kind, doc: str, **extra: Any) -> _T:
    spec = FieldSpec(key=key, kind=kind, default=default, doc=doc, **extra)
    # Secrets stay out of repr() so that logging a configuration cannot leak them.
    return field(default=default, repr=not spec.secret, metadata={"spec": spec})


def unknown_key_message(name: str, source: str, known: Sequence[str], prefix: str = "") -> str:
    """Name the unknown key, its source and the nearest known key, ignoring case and `_`."""

    # The shared prefix (LEDGER_JANITOR_) is dropped, or it makes every candidate look close.
    def squash(text: str) -> str:
        return text.removeprefix(prefix).lower().replace("_", "").replace("-", "")

    by_squashed = {squash(k): k for k in known}
    wanted = squash(name)
    nearest = difflib.get_close_matches(wanted, list(by_squashed), n=1, cutoff=0.6)
    # A truncated name scores low on similarity but is unambiguous if only one key contains it.
    containing = [k for k in by_squashed if wanted and wanted in k]
    nearest = nearest or (containing if len(containing) == 1 else [])
    hint = f"did you mean {by_squashed[nearest[0]]!r}?" if nearest else "no similar key exists"
    return f"unknown key {name!r} (from {source}); {hint}"


@dataclass(frozen=True)
class ServiceConfiguration:
    """The validated settings; constructing one with a bad value raises ConfigurationError."""

    two_phase_deletion_enabled: bool = _setting(
        True,
        "twoPhaseDeletionEnabled",
        "bool",
        "Delete ledgers in two phases (enqueue, then delete) rather than at once.",
    )
    ledger_deletion_parallelism_of_two_phase_deletion: int = _setting(
        4,
        "ledgerDeletionParallelismOfTwoPhaseDeletion",
        "int",
        "Ledgers the phase-two consumer deletes concurrently.",
        minimum=1,
    )
    send_delay_seconds_of_two_phase_deletion: int = _setting(
        60,
        "sendDelaySecondsOfTwoPhaseDeletion",
        "int",
        "Delay before a pending deletion is first delivered to phase two.",
        minimum=0,
    )
    reconsume_later_seconds_of_two_phase_deletion: int = _setting(
        600,
        "reconsumeLaterSecondsOfTwoPhaseDeletion",
        "int",
        "Delay before retrying a deletion that could not finish yet.",
        minimum=0,
    )
    max_reconsume_times_of_two_phase_deletion: int = _setting(
        10,
        "maxReconsumeTimesOfTwoPhaseDeletion",
        "int",
        "Retries of a pending deletion before it is archived.",
        minimum=1,
    )
    in_use_ledgers_cache_ttl_seconds: int = _setting(
        600,
        "inUseLedgersCacheTtlSeconds",
        "int",
        "How long the set of still-referenced ledgers is cached.",
        minimum=0,
    )
    managed_ledger_max_unacked_ranges_to_persist: int = _setting(
        10000,
        "managedLedgerMaxUnackedRangesToPersist",
        "int",
        "Most acknowledgment holes a cursor persists.",
    )
    persistent_unacked_ranges_with_multiple_entries_enabled: bool = _setting(
        False,
        "persistentUnackedRangesWithMultipleEntriesEnabled",
        "bool",
        "Let persisted acknowledgment holes span several ledger entries.",
    )
    persistent_unacked_ranges_max_entry_size: int = _setting(
        1048576,
        "persistentUnackedRangesMaxEntrySize",
        "int",
        "Largest entry, in bytes, used for persisted acknowledgment holes.",
    )
    cursor_info_compression_type: str = _setting(
        "NONE",
        "cursorInfoCompressionType",
        "enum",
        "Compression of persisted cursor info.",
        choices=COMPRESSION_TYPES,
    )
    dispatcher_pause_on_ack_state_persistent_enabled: bool = _setting(
        False,
        "dispatcherPauseOnAckStatePersistentEnabled",
        "bool",
        "Pause dispatch while the acknowledgment state cannot be persisted in full.",
    )
    acknowledgment_at_batch_index_level_enabled: bool = _setting(
        False,
        "acknowledgmentAtBatchIndexLevelEnabled",
        "bool",
        "Track acknowledgments of single messages inside a batch.",
    )
    max_individual_ack_cache_bytes_per_cursor: int = _setting(
        3145728,
        "maxIndividualAckCacheBytesPerCursor",
        "int",
        "Memory, in bytes, a cursor may spend caching individual acknowledgments.",
    )
    enable_lru_cache_max_unacked_ranges: bool = _setting(
        False,
        "enableLruCacheMaxUnackedRanges",
        "bool",
        "Keep only recently used acknowledgment holes in memory (LRU).",
    )
    managed_ledger_cursor_max_entries_per_ledger: int = _setting(
        50000,
        "managedLedgerCursorMaxEntriesPerLedger",
        "int",
        "Entries written to a cursor ledger before it rolls over.",
    )
    managed_ledger_cursor_rollover_time_in_seconds: int = _setting(
        14400,
        "managedLedgerCursorRolloverTimeInSeconds",
        "int",
        "Age, in seconds, after which a cursor ledger rolls over.",
    )
    broker_service_url: str = _setting(
        "pulsar://127.0.0.1:6650",
        "brokerServiceUrl",
        "url",
        "Broker binary-protocol URL.",
        schemes=("pulsar://", "pulsar+ssl://"),
    )
    web_service_url: str = _setting(
        "",
        "webServiceUrl",
        "url",
        "Broker admin REST URL; empty = none.",
        schemes=("http://", "https://"),
        optional=True,
    )
    metadata_store_url: str = _setting(
        "sqlite:ledger-janitor.db",
        "metadataStoreUrl",
        "store",
        f"Metadata store: {STORE_URL_FORMS}.",
    )
    bookkeeper_metadata_service_uri: str = _setting(
        "",
        "bookkeeperMetadataServiceUri",
        "store",
        "Ledger metadata store; empty = the metadataStoreUrl store.",
        optional=True,
    )
    deletion_namespaces: tuple[str, ...] = _setting(
        (),
        "deletionNamespaces",
        "namespaces",
        "Namespaces to clean, as comma-separated tenant/namespace.",
    )
    auth_plugin: str = _setting(
        "", "authPlugin", "str", "Client authentication plugin class; empty = none."
    )
    auth_params: str = _setting(
        "", "authParams", "str", "Parameters for authPlugin (secret).", secret=True
    )
    operation_timeout_seconds: int = _setting(
        30,
        "operationTimeoutSeconds",
        "int",
        "Time-out of one broker or metadata operation.",
        minimum=1,
    )
    max_held_early_messages: int = _setting(
        10000,
        "maxHeldEarlyMessages",
        "int",
        "Early deliveries held in memory before they are negatively acknowledged.",
        minimum=1,
    )

    def __post_init__(self) -> None:
        problems: list[str] = []
        for spec in SPECS:
            raw = getattr(self, spec.name)
            try:
                # Normalise too (e.g. "lz4" -> "LZ4", list -> tuple) so equal configs compare equal.
                object.__setattr__(self, spec.name, spec.coerce(raw))
            except ValueError as exc:
                problems.append(spec.bad_value(raw, None, str(exc)))
        if problems:
            raise ConfigurationError("\n".join(problems))

    def with_overrides(self, **changes: Any) -> ServiceConfiguration:
        """A copy with snake_case attributes replaced, validated like any other source."""
        known = [spec.name for spec in SPECS]
        unknown = [unknown_key_message(n, "code", known) for n in changes if n not in known]
        if unknown:
            raise ConfigurationError("\n".join(unknown))
        return replace(self, **changes)


SPECS: Final[tuple[FieldSpec, ...]] = tuple(
    replace(f.metadata["spec"], name=f.name) for f in fields(ServiceConfiguration)
)
