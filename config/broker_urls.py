"""The broker's own service and web URLs, worked out from its `broker.conf` as the broker
works them out, for a sidecar that reads that file: it talks to the broker next to it.

apache/pulsar 4.0, `PulsarService` (`brokerServiceUrl`, `webServiceAddress`) with
`ServiceConfigurationUtils.getAppliedAdvertisedAddress`: the host is `advertisedAddress`; when
that is blank, the host of the internal listener of `advertisedListeners`
(`internalListenerName`, else the first listener named); when that is absent too, the local
host's canonical name (`InetAddress.getLocalHost().getCanonicalHostName()`). The ports are
`brokerServicePort` (`pulsar://`) and `webServicePort` (`http://`); the broker's own clients
use the TLS ones (`brokerServicePortTls`, `webServicePortTls`) when `brokerClientTlsEnabled`
is true, and so does this; a TLS port alone is used alone.

Only what the file leaves unset of ours is derived: a `brokerServiceUrl` or `webServiceUrl`
written in the file, the environment or on `--set` wins.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

ADDRESS_KEY: Final = "advertisedAddress"
LISTENERS_KEY: Final = "advertisedListeners"
INTERNAL_LISTENER_KEY: Final = "internalListenerName"
CLIENT_TLS_KEY: Final = "brokerClientTlsEnabled"
# Our key: (plain port key, plain scheme, TLS port key, TLS scheme).
_URLS: Final = {
    "brokerServiceUrl": ("brokerServicePort", "pulsar", "brokerServicePortTls", "pulsar+ssl"),
    "webServiceUrl": ("webServicePort", "http", "webServicePortTls", "https"),
}


# Where a URL's host came from when no key gives it.
LOCAL_NAME: Final = "the local host name"


@dataclass(frozen=True)
class DerivedUrl:
    url: str
    keys: tuple[str, ...]  # the broker's keys it was made from

    @property
    def origin(self) -> str:
        """e.g. `advertisedAddress+brokerServicePort`, `brokerServicePort+the local host name`."""
        has_host = any(key in (ADDRESS_KEY, LISTENERS_KEY) for key in self.keys)
        return "+".join(self.keys if has_host else (*self.keys, LOCAL_NAME))


def broker_urls(
    given: Mapping[str, str], local_name: Callable[[], str] = socket.getfqdn
) -> dict[str, DerivedUrl]:
    """Per URL key of ours the file does not set, the broker's own URL for it, if its ports
    are there. `given` holds the file's non-blank values, stripped."""
    derived: dict[str, DerivedUrl] = {}
    host: tuple[str, tuple[str, ...]] | None = None
    tls = given.get(CLIENT_TLS_KEY, "").lower() == "true"
    for key, (plain_port, plain, tls_port, secure) in _URLS.items():
        if key in given:
            continue
        chosen = _port(given, plain_port, plain, tls_port, secure, tls)
        if chosen is None:
            continue
        host = host or _host(given, local_name)
        port_key, scheme = chosen
        derived[key] = DerivedUrl(f"{scheme}://{host[0]}:{given[port_key]}", (*host[1], port_key))
    return derived


def _port(
    given: Mapping[str, str], plain_port: str, plain: str, tls_port: str, secure: str, tls: bool
) -> tuple[str, str] | None:
    if tls_port in given and (tls or plain_port not in given):
        return tls_port, secure
    if plain_port in given:
        return plain_port, plain
    return None


def _host(given: Mapping[str, str], local_name: Callable[[], str]) -> tuple[str, tuple[str, ...]]:
    """The host and the keys it came from (none: the local host's canonical name)."""
    if ADDRESS_KEY in given:
        return given[ADDRESS_KEY], (ADDRESS_KEY,)
    listener = _internal_listener_host(given)
    if listener is not None:
        return listener, (LISTENERS_KEY,)
    return local_name(), ()


def _internal_listener_host(given: Mapping[str, str]) -> str | None:
    """`name:scheme://host:port,...`: the host of the internal listener's first URL."""
    listeners = [item.strip() for item in given.get(LISTENERS_KEY, "").split(",") if item.strip()]
    named = [item.partition(":") for item in listeners]
    internal = given.get(INTERNAL_LISTENER_KEY) or (named[0][0] if named else None)
    for name, _, url in named:
        if name == internal:
            return urlsplit(url).hostname or None
    return None
