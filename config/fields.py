"""How one setting is described, checked and reported: the machinery behind ServiceConfiguration."""

from __future__ import annotations

import difflib
import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from config.urls import LEDGERS_URL_FORMS, STORE_URL_FORMS, check_ledgers_url, check_store_url

Kind = Literal["bool", "int", "str", "enum", "namespaces", "store", "ledgers", "url", "host"]
_T = TypeVar("_T")

# Plain decimal only: int() would also take "1_000" and non-ASCII digits, which Pulsar rejects.
_INT: Final = re.compile(r"[+-]?[0-9]+")
# Pulsar's own rule for tenant and namespace names.
_NAME_PART: Final = re.compile(r"[-=:.\w]+", re.ASCII)
# How alike (difflib's ratio) an unknown key in a file must be to one of ours to be its typo.
TYPO_CUTOFF: Final = 0.85
# Java's Integer.MAX_VALUE: the broker reads these keys as Java ints and refuses larger values.
JAVA_INT_MAX: Final = 2**31 - 1
COMPRESSION_TYPES: Final = ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY")


@dataclass(frozen=True)
class FieldSpec:
    """What the loader and `config show` need to know about one setting."""

    key: str
    kind: Kind
    default: object
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    schemes: tuple[str, ...] = ()
    optional: bool = False  # an empty string means "not set" rather than "invalid"
    secret: bool = False
    name: str = ""  # the attribute; filled in from the dataclass field below

    def __post_init__(self) -> None:
        # Every integer setting is a count, a size or a duration: none may be negative.
        if self.kind == "int" and self.minimum is None:
            object.__setattr__(self, "minimum", 0)
        if self.kind == "int" and self.maximum is None:
            object.__setattr__(self, "maximum", JAVA_INT_MAX)

    @property
    def expected(self) -> str:
        """The accepted values, phrased to follow 'expected'."""
        text = {
            "bool": "true or false",
            "int": f"an integer from {self.minimum} to {self.maximum}",
            "str": "a string",
            "enum": "one of " + ", ".join(self.choices) + " (any case)",
            "namespaces": "a comma-separated list of tenant/namespace",
            "store": STORE_URL_FORMS,
            "ledgers": LEDGERS_URL_FORMS,
            "url": "a URL starting with " + " or ".join(self.schemes),
            "host": "an IP address or a host name that resolves",
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
            if isinstance(value, str):
                return java_boolean(value, self.default)
        elif self.kind == "int":
            if isinstance(value, str) and _INT.fullmatch(value):
                value = int(value)
            # bool is an int subclass, but True as a thread count is always a mistake.
            if (
                isinstance(value, int)
                and not isinstance(value, bool)
                and (self.minimum is None or value >= self.minimum)
                and (self.maximum is None or value <= self.maximum)
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
            if self.kind in ("store", "ledgers"):
                check = check_store_url if self.kind == "store" else check_ledgers_url
                try:
                    # Our own spelling, whichever of the broker's it was written in.
                    return check(value).text
                except ValueError as exc:
                    raise ValueError(f"expected {self.expected} ({exc})") from None
            if self.kind == "host" and _resolvable(value):
                return value
        raise ValueError(f"expected {self.expected}")

    def bad_value(self, raw: object, source: str | None, problem: str) -> str:
        """One error line naming the key, the value, where it came from and what was expected."""
        shown = "***" if self.secret and raw else raw
        origin = f" (from {source})" if source else ""
        return f"{self.key}={shown!r}{origin}: {problem}"


def java_boolean(text: str, default: object) -> object:
    """A boolean as Pulsar reads it from the same file, so the broker and we agree on it.

    `FieldParser.update` leaves a field whose value is blank at its default, and otherwise
    sets `stringToBoolean(value.trim())`, which is `Boolean.valueOf`: `true` in any case is
    true, and anything else, `yes` and `1` included, is false.
    """
    text = text.strip()
    if not text:
        return default
    return text.lower() == "true"


def is_plain_boolean(text: str) -> bool:
    """Whether Java and a reader of the file agree: `true`, `false` (any case) or blank."""
    return text.strip().lower() in ("true", "false", "")


def _namespaces(value: object, expected: str) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[object] = [p.strip() for p in value.split(",")] if value else []
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ValueError(f"expected {expected}")
    for item in items:
        tenant, _, namespace = item.partition("/") if isinstance(item, str) else ("", "", "")
        if not (_name_part(tenant) and _name_part(namespace)):
            raise ValueError(f"expected {expected}; {item!r} is not tenant/namespace")
    return tuple(str(item) for item in items)


def _resolvable(host: str) -> bool:
    """An IP address, or a name the resolver knows: checked when the configuration loads, so a
    bad bind address fails `config show` as well as `run`, not later as a traceback."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return True
    if not host or any(c.isspace() for c in host):
        return False
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return True


def _name_part(text: str) -> bool:
    return _NAME_PART.fullmatch(text) is not None and text not in (".", "..")


def setting(default: _T, key: str, kind: Kind, doc: str, **extra: Any) -> _T:
    spec = FieldSpec(key=key, kind=kind, default=default, doc=doc, **extra)
    # Secrets stay out of repr() so that logging a configuration cannot leak them.
    return field(default=default, repr=not spec.secret, metadata={"spec": spec})


def nearest_key(name: str, known: Sequence[str], prefix: str = "") -> str | None:
    """The known key `name` most likely misspells, ignoring case and `_`; None if none is close."""

    # The shared prefix (LEDGER_JANITOR_) is dropped, or it makes every candidate look close.
    def squash(text: str) -> str:
        return text.removeprefix(prefix).lower().replace("_", "").replace("-", "")

    by_squashed = {squash(k): k for k in known}
    wanted = squash(name)
    nearest = difflib.get_close_matches(wanted, list(by_squashed), n=1, cutoff=0.6)
    # A truncated name scores low on similarity but is unambiguous if only one key contains it.
    containing = [k for k in by_squashed if wanted and wanted in k]
    nearest = nearest or (containing if len(containing) == 1 else [])
    return by_squashed[nearest[0]] if nearest else None


def typo_of(name: str, known: Sequence[str]) -> str | None:
    """The key of `known` that `name` is a slip of the keyboard for: nearly the same letters
    (ignoring case and `_`), or cut short. Stricter than `nearest_key`: a file may hold other
    programs' keys (a broker's, a bookie's), which are not typos of ours."""

    def squash(text: str) -> str:
        return text.lower().replace("_", "").replace("-", "")

    by_squashed = {squash(k): k for k in known}
    wanted = squash(name)
    close = difflib.get_close_matches(wanted, list(by_squashed), n=1, cutoff=TYPO_CUTOFF)
    cut_short = [k for k in by_squashed if len(wanted) >= 6 and k.startswith(wanted)]
    found = close or (cut_short if len(cut_short) == 1 else [])
    return by_squashed[found[0]] if found else None


def unknown_key_message(name: str, source: str, known: Sequence[str], prefix: str = "") -> str:
    """Name the unknown key, its source and the nearest known key."""
    nearest = nearest_key(name, known, prefix)
    hint = f"did you mean {nearest!r}?" if nearest else "no similar key exists"
    return f"unknown key {name!r} (from {source}); {hint}"


def one_line(problems: Sequence[str]) -> str:
    """Several problems as one line (the error contract: one `error:` line), each kept whole."""
    flat = [" ".join(p.split("\n")) for p in problems]
    if len(flat) == 1:
        return flat[0]
    return f"{len(flat)} configuration problems: " + " | ".join(flat)
