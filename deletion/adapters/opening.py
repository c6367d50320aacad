"""Adapters opened from configuration: the one place a store URL's scheme picks a class.

Everyone opens through here: the sidecar, phase one, `cursor inspect` and the audit. No
opening creates anything: a ZooKeeper chroot, an etcd key or an SQLite file the operator
names must exist and hold the cluster's layout (deletion.adapters.layout), else one
LayoutError (or ConfigurationError, for a missing file) names the store and what it lacks.
Only `make_embedded_store` makes a store: the demo's, and `run`'s local default. A
`StoreSpec` is the picklable description of a store, so a Spark executor opens exactly what
the driver described, credentials included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from config import ServiceConfiguration, StoreUrl, parse_store_url
from config.settings import zookeeper_tls
from config.zookeeper_tls import ZooKeeperTls
from core.clock import WallClock
from core.errors import ConfigurationError
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.layout import require_pulsar_layout
from deletion.adapters.ledgers.bookie_http import BookieHttpLedgerStorage
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter, MetadataInUseLedgers
from deletion.adapters.stores.etcd import EtcdMetadataStore
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore, digest_from_env
from deletion.domain.offload_port import OffloadStorage
from deletion.domain.ports import InUseLedgers, LedgerStorage, MetadataStore
from transport.admin_http import AdminHttp


@dataclass(frozen=True)
class StoreSpec:
    """A store and how to reach it; `digest` (ZooKeeper's user:password) is taken from this
    process's environment when the spec is made, and never shown. `tls` (ZooKeeper's, from
    metadataStoreConfigPath) names PEM files: they are read where the store is opened."""

    url: StoreUrl
    timeout: float = 30.0
    digest: str = field(default_factory=digest_from_env, repr=False)
    tls: ZooKeeperTls | None = None

    @property
    def where(self) -> str:
        """The store as errors name it: `ZooKeeper at zk1:2181/pulsar`."""
        url = self.url
        if url.scheme == "zk":
            return f"ZooKeeper at {url.hosts}{url.chroot}"
        if url.scheme == "etcd":
            return "etcd at " + ",".join(url.endpoints)
        return f"the embedded store {url.path}"

    @property
    def embedded(self) -> bool:
        """The embedded store: one local SQLite file, not a networked ZooKeeper or etcd."""
        return self.url.scheme == "sqlite"

    @classmethod
    def metadata(cls, config: ServiceConfiguration) -> StoreSpec:
        """Pulsar's metadata: metadataStoreUrl."""
        url = parse_store_url(config.metadata_store_url)
        return cls(url, _timeout(config), tls=zookeeper_tls(config))

    @classmethod
    def ledgers(cls, config: ServiceConfiguration, url: str | None = None) -> StoreSpec:
        """The ledgers: `url` if given, else bookkeeperMetadataServiceUri, else the metadata
        store (where BookKeeper keeps them unless told otherwise)."""
        chosen = url or config.bookkeeper_metadata_service_uri or config.metadata_store_url
        return cls(parse_store_url(chosen), _timeout(config), tls=zookeeper_tls(config))


def _timeout(config: ServiceConfiguration) -> float:
    return float(config.operation_timeout_seconds)


def _networked(spec: StoreSpec) -> MetadataStore | None:
    """The store behind a `zk:` or `etcd:` URL; None for the embedded one."""
    if spec.url.scheme == "zk":
        return ZooKeeperMetadataStore.connect(
            spec.url, spec.timeout, digest=spec.digest, tls=spec.tls
        )
    if spec.url.scheme == "etcd":
        return EtcdMetadataStore.connect(spec.url, spec.timeout)  # etcd has no chroot
    return None


def open_store(spec: StoreSpec) -> MetadataStore:
    """The store alone, its layout not checked (BookKeeper's tree walked by the audit's
    executors, after the driver checked it): ZooKeeper, etcd, or an existing embedded one."""
    store = _networked(spec)
    if store is not None:
        return store
    return SqliteMetadataStore(spec.url.path, create=False)


def open_metadata_store(spec: StoreSpec) -> MetadataStore:
    """Pulsar's metadata store, holding Pulsar's roots (`/admin`, `/managed-ledgers`)."""
    store = open_store(spec)
    try:
        require_pulsar_layout(store, spec.where)
    except BaseException:
        store.close()
        raise
    return store


def open_ledger_storage(spec: StoreSpec, *, bookie_http: str = "") -> LedgerStorage:
    """BookKeeper's ledger metadata for `zk:` and `etcd:` (its LAYOUT checked; deleting
    through a bookie's HTTP API if `bookie_http` is given), the embedded ledger store (its
    table checked) for `sqlite:`."""
    store = _networked(spec)
    if store is None:
        if bookie_http:
            raise ConfigurationError("bookieHttpServiceUrl needs a zk: or etcd: ledger store")
        return SqliteLedgerStorage(spec.url.path, create=False)
    bookkeeper = BookKeeperLedgerStorage(store, where=spec.where)
    try:
        bookkeeper.verify_layout()
    except BaseException:
        bookkeeper.close()
        raise
    if bookie_http:
        return BookieHttpLedgerStorage(bookkeeper, bookie_http, spec.timeout)
    return bookkeeper


def make_embedded_store(path: str | Path) -> None:
    """A new embedded store at `path` (its directory made too), metadata and ledgers, laid
    out as a Pulsar cluster's (`/admin`, `/managed-ledgers`; the ledgers in their table):
    the demo's, and `run`'s local default. An existing one keeps what it holds (what it
    lacks of its tables and roots is added)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    SqliteLedgerStorage(path).close()
    store = SqliteMetadataStore(path)
    try:
        ManagedLedgerWriter(store).lay_out(bookkeeper=False)
    finally:
        store.close()


def open_embedded_ledgers(spec: StoreSpec) -> SqliteLedgerStorage | None:
    """The embedded ledger store, opened read-only (entries and all); None for BookKeeper's,
    whose entries live on the bookies and whose metadata is in ZooKeeper or etcd."""
    if not spec.embedded:
        return None
    return SqliteLedgerStorage(spec.url.path, create=False)


def open_in_use_source(
    config: ServiceConfiguration,
    metadata: MetadataStore,
    clock: WallClock,
    admin: AdminHttp | None = None,
) -> InUseLedgers:
    """inUseLedgersSource: the metadata store itself, or the brokers' admin API (through
    `admin`, the sidecar's one admin client, if given; else one of its own)."""
    where = StoreSpec.metadata(config).where
    if config.in_use_ledgers_source == "METADATA":
        return MetadataInUseLedgers(metadata, clock, where)
    http = admin or AdminHttp.from_config(config)
    if http is None:
        raise ConfigurationError("inUseLedgersSource=ADMIN needs webServiceUrl")
    return AdminApiInUseLedgers(http, clock=clock, schemas=metadata, where=where)


def open_offload_storage(config: ServiceConfiguration) -> OffloadStorage | None:
    """An OffloadRouter for the configured tiered storage, or None when none is configured."""
    # Imported here: boto3 alone takes a tenth of a second, wasted where nothing is offloaded.
    from deletion.adapters.offload import (
        S3_DRIVERS,
        FileSystemOffloadStorage,
        OffloadRouter,
        S3OffloadStorage,
    )

    driver = config.managed_ledger_offload_driver
    endpoint = config.s3_managed_ledger_offload_service_endpoint
    bucket = config.s3_managed_ledger_offload_bucket
    s3 = None
    if bucket or endpoint or driver.lower() in S3_DRIVERS:
        s3 = S3OffloadStorage(
            default_bucket=bucket or None,
            endpoint_url=endpoint or None,
            region=config.s3_managed_ledger_offload_region or None,
        )
    filesystem = None
    if config.file_system_offload_storage_base_path:
        filesystem = FileSystemOffloadStorage.from_config(
            config.file_system_uri, config.file_system_offload_storage_base_path
        )
    if s3 is None and filesystem is None:
        return None
    return OffloadRouter(s3=s3, filesystem=filesystem, default_driver=driver or None)
