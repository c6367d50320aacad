"""Metadata-store URLs: the stores ledger-janitor knows how to reach, spelled as Pulsar spells them.

Besides our own `zk:`, `etcd:` and `sqlite:` forms, the broker's spellings are read as the
broker reads them (apache/pulsar, `pulsar-broker-common/.../broker/ServiceConfiguration.java`
`getMetadataStoreUrl`, and `pulsar-metadata/.../bookkeeper/MetadataStoreUrl.java`):
`metadata-store:<url>` (BookKeeper's driver scheme, `;` between hosts) is `<url>`, and a URL
with no scheme at all is a ZooKeeper connect string (`host:2181,host2:2181[/chroot]`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

from core.errors import ConfigurationError

STORE_URL_FORMS: Final = (
    "zk:host:port[,host:port][/chroot], etcd:http://host:port[,http://host:port] or sqlite:PATH"
)
BOOKKEEPER_DRIVER_PREFIX: Final = "metadata-store:"
LEDGERS_URL_FORMS: Final = (
    STORE_URL_FORMS + " or zk+hierarchical://host:port[;host:port][/chroot]/ledgers"
)
# BookKeeper's own metadata-service URI for ZooKeeper: `zk[+layout]://hosts/ledgers-root`.
_BOOKKEEPER_ZK: Final = re.compile(r"zk(?:\+(?P<layout>[\w-]+))?://(?P<hosts>[^/]*)(?P<root>/.*)?")
# The ledger layouts whose paths are ours (deletion/wire/bookkeeper_metadata.ledger_path);
# "null" lets BookKeeper read it from the LAYOUT znode, which Pulsar writes as hierarchical.
_OUR_LAYOUTS: Final = (None, "null", "hierarchical")


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store URL; `hosts`/`chroot` are set for zk, `endpoints` for etcd, `path` for
    sqlite."""

    scheme: Literal["zk", "etcd", "sqlite"]
    hosts: str = ""
    chroot: str = ""
    path: str = ""
    endpoints: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The URL in our own spelling: what `config show` prints and every reader parses."""
        if self.scheme == "zk":
            return f"zk:{self.hosts}{self.chroot}"
        if self.scheme == "etcd":
            return "etcd:" + ",".join(self.endpoints)
        return f"sqlite:{self.path}"


def parse_store_url(url: str) -> StoreUrl:
    """Parse `zk:host:port[,host:port][/chroot]`, `etcd:http://host:port[,...]` or
    `sqlite:PATH`."""
    try:
        return check_store_url(url)
    except ValueError as exc:
        raise ConfigurationError(
            f"invalid store URL {url!r}: {exc}; expected {STORE_URL_FORMS}"
        ) from None


def check_store_url(url: str) -> StoreUrl:
    """Like parse_store_url, but raises ValueError carrying only the reason.

    Settings validation wraps the reason in its own key/value/source message, so it
    must not be buried inside a second copy of the URL.
    """
    if url.startswith(BOOKKEEPER_DRIVER_PREFIX):
        # BookKeeper's metadata-service form of a Pulsar store URL; its hosts may be `;`-separated.
        url = url.removeprefix(BOOKKEEPER_DRIVER_PREFIX).replace(";", ",")
    scheme, colon, rest = url.partition(":")
    if colon and scheme == "zk":
        return _parse_zk(rest)
    if colon and scheme == "etcd":
        return _parse_etcd(rest)
    if colon and scheme == "sqlite":
        return _parse_sqlite(rest)
    if "://" not in url and _looks_like_hosts(url):
        # Pulsar: "will default to ZooKeeper when the scheme is not specified".
        return _parse_zk(url)
    raise ValueError("the scheme must be 'zk:', 'etcd:' or 'sqlite:'")


def check_ledgers_url(url: str) -> StoreUrl:
    """bookkeeperMetadataServiceUri: a store URL as `check_store_url` reads it, or BookKeeper's
    `zk+hierarchical://host:port[;host:port]/ledgers` as the broker's broker.conf has it.

    There the path is the ledgers root (BookKeeper's `ZKMetadataDriverBase`); we read the
    ledgers at `<chroot>/ledgers`, so the root must end in `/ledgers`.
    """
    found = _BOOKKEEPER_ZK.fullmatch(url)
    if found is None:
        return check_store_url(url)
    if found["layout"] not in _OUR_LAYOUTS:
        raise ValueError(f"ledger layout {found['layout']!r}: only the hierarchical one is read")
    root = found["root"] or "/ledgers"
    if not root.endswith("/ledgers"):
        raise ValueError(f"ledgers root {root!r}: only <chroot>/ledgers is read")
    return _parse_zk(found["hosts"].replace(";", ",") + root.removesuffix("/ledgers"))


def _looks_like_hosts(url: str) -> bool:
    """`host:port[,host:port][/chroot]` with nothing that could be a mistyped scheme."""
    hosts = url.partition("/")[0]
    return bool(hosts) and all(
        part.count(":") == 1 and part.rpartition(":")[2].isdigit() for part in hosts.split(",")
    )


def _parse_zk(rest: str) -> StoreUrl:
    if rest.startswith("//"):
        # People copy `zk://host:2181` from other tools; say what we want instead.
        raise ValueError("write zk:host:port, not zk://host:port")
    hosts, slash, chroot_rest = rest.partition("/")
    if not hosts:
        raise ValueError("no ZooKeeper host:port given")
    for host_port in hosts.split(","):
        host, colon, port = host_port.rpartition(":")
        if not host or not colon or any(c.isspace() for c in host):
            raise ValueError(f"{host_port!r} is not host:port")
        if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"{host_port!r} has no valid port (1-65535)")
    chroot = "/" + chroot_rest if slash else ""
    if chroot == "/":
        # `host:2181/` names the root, which is what no chroot means.
        chroot = ""
    if chroot.endswith("/") or "//" in chroot:
        # ZooKeeper rejects such paths, but only at connect time; fail at load instead.
        raise ValueError(f"chroot {chroot!r} has an empty path segment")
    return StoreUrl("zk", hosts=hosts, chroot=chroot)


def _parse_etcd(rest: str) -> StoreUrl:
    """Pulsar's form (`EtcdMetadataStore`): `etcd:` then the client URLs, comma-separated."""
    if rest.startswith("//"):
        raise ValueError("write etcd:http://host:port, not etcd://host:port")
    if not rest:
        raise ValueError("no etcd endpoint given")
    endpoints = []
    for endpoint in rest.split(","):
        if not endpoint:
            raise ValueError("an empty etcd endpoint (a stray comma?)")
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not endpoint.startswith(parts.scheme + "://"):
            raise ValueError(f"endpoint {endpoint!r} needs an http:// or https:// scheme")
        try:
            port = parts.port
        except ValueError:
            port = None
        if any(c.isspace() for c in endpoint):
            raise ValueError(f"endpoint {endpoint!r} contains a space")
        if not parts.hostname:
            raise ValueError(f"endpoint {endpoint!r} has no host")
        if port is None or port == 0:
            raise ValueError(f"endpoint {endpoint!r} has no valid port (1-65535)")
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            # Pulsar's etcd store has no chroot: a path here would be silently ignored.
            raise ValueError(f"endpoint {endpoint!r} must be scheme://host:port alone")
        endpoints.append(f"{parts.scheme}://{parts.netloc}")
    return StoreUrl("etcd", endpoints=tuple(endpoints))


def _parse_sqlite(path: str) -> StoreUrl:
    if not path.strip():
        raise ValueError("no sqlite database path given")
    if path.startswith("//"):
        # SQLAlchemy-style `sqlite:///x` would silently mean a different file here.
        raise ValueError("write sqlite:/absolute/path or sqlite:relative/path, not sqlite://")
    return StoreUrl("sqlite", path=path)
