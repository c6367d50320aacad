"""Can the sidecar reach its metadata store and broker? Answered in seconds, by TCP.

The Pulsar client waits out its whole operation time-out (30 s) on a broker that is not
there, and kazoo on a ZooKeeper that is not there, both logging as they retry; a plain
connect says at once which one is missing.
"""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

from config import ServiceConfiguration, parse_store_url

Address = tuple[str, int]
# A host that is up answers a TCP connect in milliseconds; this only bounds a silent one.
PROBE_SECONDS = 3.0
DEFAULT_PORTS = {"pulsar://": 6650, "pulsar+ssl://": 6651}


def host_ports(hosts: str, default_port: int) -> list[Address]:
    """`h1:p1,h2,[::1]:p3` as (host, port) pairs."""
    found: list[Address] = []
    for item in filter(None, (part.strip() for part in hosts.split(","))):
        host, port = item, default_port
        if item.startswith("["):  # [IPv6]:port
            host, _, rest = item[1:].partition("]")
            port = int(rest[1:]) if rest[1:].isdigit() else default_port
        elif item.count(":") == 1:
            host, _, text = item.partition(":")
            port = int(text) if text.isdigit() else default_port
        found.append((host, port))
    return found


def broker_addresses(service_url: str) -> list[Address]:
    for scheme, port in DEFAULT_PORTS.items():
        if service_url.startswith(scheme):
            return host_ports(service_url.removeprefix(scheme).split("/", 1)[0], port)
    return []


def refusal(addresses: list[Address], timeout: float) -> str | None:
    """None if any address accepts a connection, else why the last one did not."""
    reason = "no address given"
    for address in addresses:
        try:
            with socket.create_connection(address, timeout=timeout):
                return None
        except TimeoutError:
            reason = f"no answer from {address[0]}:{address[1]} within {timeout:g} s"
        except OSError as exc:
            reason = f"{address[0]}:{address[1]}: {exc.strerror or exc}"
    return reason


def unreachable(config: ServiceConfiguration, timeout: float) -> str | None:
    """None if the metadata store(s) and the broker answer, else one line naming the first
    that does not, its URL and why."""
    targets = [("the metadata store", config.metadata_store_url)]
    ledgers = config.bookkeeper_metadata_service_uri
    if ledgers and ledgers != config.metadata_store_url:
        targets.append(("the ledger metadata store", ledgers))
    for what, url in targets:
        if parse_store_url(url).scheme == "sqlite":
            continue  # the embedded store is a local file
        line = store_unreachable(what, url, timeout)
        if line is not None:
            return line
    return broker_unreachable(config.broker_service_url, timeout)


def _endpoint_addresses(endpoints: tuple[str, ...]) -> list[tuple[str, int]]:
    """etcd's client URLs (`http://host:port`) as addresses; 2379 is etcd's client port."""
    parts = [urlsplit(endpoint) for endpoint in endpoints]
    return [(part.hostname or "localhost", part.port or 2379) for part in parts]


def store_unreachable(what: str, url: str, timeout: float) -> str | None:
    """None if the store at `url` answers (an embedded store: its file exists), else one line
    naming it, its URL and why. The audit asks before it starts Spark."""
    store = parse_store_url(url)
    if store.scheme == "zk":
        reason = refusal(host_ports(store.hosts, 2181), timeout)
    elif store.scheme == "etcd":
        reason = refusal(_endpoint_addresses(store.endpoints), timeout)
    else:
        reason = None if Path(store.path).is_file() else f"no such file: {store.path}"
    return None if reason is None else f"cannot reach {what} at {url} ({reason})"


def broker_unreachable(service_url: str, timeout: float) -> str | None:
    """None if the broker answers, else one line saying why not."""
    reason = refusal(broker_addresses(service_url), timeout)
    return None if reason is None else f"cannot reach the broker at {service_url} ({reason})"
