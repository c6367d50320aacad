"""Every setting ledger-janitor understands: its Pulsar-style key, type, default and check."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Final

from config.fields import COMPRESSION_TYPES, FieldSpec, one_line, unknown_key_message
from config.fields import setting as _setting
from config.urls import STORE_URL_FORMS
from config.zookeeper_tls import ZooKeeperTls, ZooKeeperTlsError, load_zookeeper_tls
from core.errors import ConfigurationError


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
        "Partitions of the deletion topic, created when webServiceUrl is set (PIP-186).",
        minimum=1,
    )
    ledger_deletion_worker_threads_of_two_phase_deletion: int = _setting(
        4,
        "ledgerDeletionWorkerThreadsOfTwoPhaseDeletion",
        "int",
        "Batches of pending deletions the phase-two consumer handles concurrently.",
        minimum=1,
    )
    ledger_deletion_batch_size_of_two_phase_deletion: int = _setting(
        128,
        "ledgerDeletionBatchSizeOfTwoPhaseDeletion",
        "int",
        "Most pending deletions in one batch: its reads go as one request, its deletes as another.",
        minimum=1,
    )
    ledger_deletion_schema_enabled_of_two_phase_deletion: bool = _setting(
        True,
        "ledgerDeletionSchemaEnabledOfTwoPhaseDeletion",
        "bool",
        "Declare our Avro schema on the deletion, retry and archive topics (schema registry).",
    )
    send_delay_seconds_of_two_phase_deletion: int = _setting(
        60,
        "sendDelaySecondsOfTwoPhaseDeletion",
        "int",
        "Delay before a pending deletion is first delivered to phase two.",
        minimum=0,
    )
    clock_skew_allowance_seconds_of_two_phase_deletion: int = _setting(
        10,
        "clockSkewAllowanceSecondsOfTwoPhaseDeletion",
        "int",
        "Largest clock difference assumed between producers, metadata store and worker; "
        "added to every due time and ledger age.",
        minimum=0,
    )
    min_ledger_age_seconds_of_two_phase_deletion: int = _setting(
        600,
        "minLedgerAgeSecondsOfTwoPhaseDeletion",
        "int",
        "Age every ledger must have had, when the in-use snapshot was read, before it is "
        "deleted, and the age at which an unreferenced one is: Pulsar records a ledger within "
        "about 2 minutes of creating it or never, so an older one is an orphan for good; 0 "
        "turns the rule off (then only a ledger below its own creator's newest goes, and "
        "schema ledgers being created are unprotected).",
        minimum=0,
    )
    metadata_store_session_timeout_millis: int = _setting(
        30000,
        "metadataStoreSessionTimeoutMillis",
        "int",
        "The brokers' metadata-store session time-out (the broker's own key): with the age "
        "rule on, a connection to the store must be this old before a snapshot read on it lets "
        "a ledger go, since brokers' writes held up by a ZooKeeper outage land right after it.",
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
        minimum=1,
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
        minimum=1,
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
    in_use_ledgers_source: str = _setting(
        "METADATA",
        "inUseLedgersSource",
        "enum",
        "Where in-use ledgers are read: METADATA (the store) or ADMIN (webServiceUrl's "
        "internalStats).",
        choices=("METADATA", "ADMIN"),
    )
    tls_trust_certs_file_path: str = _setting(
        "",
        "tlsTrustCertsFilePath",
        "str",
        "CA file trusted for https:// admin URLs and pulsar+ssl:// brokers.",
    )
    tls_allow_insecure_connection: bool = _setting(
        False,
        "tlsAllowInsecureConnection",
        "bool",
        "Accept any TLS certificate from the admin URL or broker (tests only).",
    )
    bookie_http_service_url: str = _setting(
        "",
        "bookieHttpServiceUrl",
        "url",
        "Delete ledgers through a bookie's HTTP API (DELETE /api/v1/ledger/delete); "
        "empty = delete their metadata znodes.",
        schemes=("http://", "https://"),
        optional=True,
    )
    managed_ledger_offload_driver: str = _setting(
        "",
        "managedLedgerOffloadDriver",
        "str",
        "Offload driver for contexts that name none (aws-s3, S3, aliyun-oss, filesystem).",
    )
    s3_managed_ledger_offload_bucket: str = _setting(
        "", "s3ManagedLedgerOffloadBucket", "str", "Bucket for contexts that name none."
    )
    s3_managed_ledger_offload_region: str = _setting(
        "", "s3ManagedLedgerOffloadRegion", "str", "S3 region of the offload bucket."
    )
    s3_managed_ledger_offload_service_endpoint: str = _setting(
        "",
        "s3ManagedLedgerOffloadServiceEndpoint",
        "url",
        "S3-compatible endpoint; credentials come from the environment (AWS_*).",
        schemes=("http://", "https://"),
        optional=True,
    )
    file_system_uri: str = _setting(
        "", "fileSystemURI", "str", "Filesystem offloader URI; only local (file:) is supported."
    )
    file_system_offload_storage_base_path: str = _setting(
        "",
        "fileSystemOffloadStorageBasePath",
        "str",
        "The filesystem offloader's base directory (Hadoop's hadoop.tmp.dir); empty = off.",
    )
    metadata_store_url: str = _setting(
        "sqlite:ledger-janitor.db",
        "metadataStoreUrl",
        "store",
        f"Metadata store: {STORE_URL_FORMS}; the broker's spellings are read too "
        "(metadata-store:zk:..., host:port, or zookeeperServers in a file).",
    )
    bookkeeper_metadata_service_uri: str = _setting(
        "",
        "bookkeeperMetadataServiceUri",
        "ledgers",
        "Ledger metadata store (ledgers under <chroot>/ledgers), also as BookKeeper's "
        "zk+hierarchical://...; empty = the metadataStoreUrl store.",
        optional=True,
    )
    metadata_store_config_path: str = _setting(
        "",
        "metadataStoreConfigPath",
        "str",
        "ZooKeeper client properties file (Pulsar's key): zookeeper.client.secure=true and "
        "zookeeper.ssl.* PEM stores turn on TLS to every zk: store; read where each process "
        "connects (the audit's executors too); empty = plain text.",
        optional=True,
    )
    deletion_namespaces: tuple[str, ...] = _setting(
        (),
        "deletionNamespaces",
        "namespaces",
        "Namespaces `run` works, as comma-separated tenant/namespace: exactly these when set "
        "(a pilot; `archive list|drain` without --namespace read these too); empty = every "
        "namespace with a deletion topic. `audit --enqueue` sends only to these when set; "
        "`enqueue` sends where it is told.",
    )
    auth_plugin: str = _setting(
        "", "authPlugin", "str", "Client authentication plugin class; empty = none."
    )
    auth_params: str = _setting(
        "", "authParams", "str", "Parameters for authPlugin (secret).", secret=True
    )
    metrics_port: int = _setting(
        9464,
        "metricsPort",
        "int",
        "Port of /metrics, /health and /ready for `run`; 0 = off.",
        minimum=0,
        maximum=65535,
    )
    metrics_bind_address: str = _setting(
        "127.0.0.1",
        "metricsBindAddress",
        "host",
        "Address the metrics port listens on: an IP address or a host name that resolves.",
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
        if not problems:
            problems.extend(self._zookeeper_tls_problems())
        if problems:
            raise ConfigurationError(one_line(problems))

    def _zookeeper_tls_problems(self) -> list[str]:
        """A ZooKeeper TLS file is read when loaded, so a store we cannot use fails now."""
        path = self.metadata_store_config_path
        if not path or not zookeeper_in_use(self):
            return []
        try:
            load_zookeeper_tls(path)
        except ZooKeeperTlsError as exc:
            return [_BY_NAME["metadata_store_config_path"].bad_value(path, None, str(exc))]
        return []

    def with_overrides(self, **changes: Any) -> ServiceConfiguration:
        """A copy with snake_case attributes replaced, validated like any other source."""
        known = [spec.name for spec in SPECS]
        unknown = [unknown_key_message(n, "code", known) for n in changes if n not in known]
        if unknown:
            raise ConfigurationError(one_line(unknown))
        return replace(self, **changes)


SPECS: Final[tuple[FieldSpec, ...]] = tuple(
    replace(f.metadata["spec"], name=f.name) for f in fields(ServiceConfiguration)
)
_BY_NAME: Final = {spec.name: spec for spec in SPECS}


def zookeeper_in_use(config: ServiceConfiguration) -> bool:
    """Whether a store of `config` is ZooKeeper (our spelling of its URLs starts `zk:`)."""
    urls = (config.metadata_store_url, config.bookkeeper_metadata_service_uri)
    return any(url.startswith("zk:") for url in urls)


def zookeeper_tls(config: ServiceConfiguration) -> ZooKeeperTls | None:
    """The TLS `metadataStoreConfigPath` asks for, for every kazoo client; None = plain."""
    path = config.metadata_store_config_path
    if not path or not zookeeper_in_use(config):
        return None
    try:
        return load_zookeeper_tls(path)
    except ZooKeeperTlsError as exc:  # changed since the configuration was loaded
        spec = _BY_NAME["metadata_store_config_path"]
        raise ConfigurationError(spec.bad_value(path, None, str(exc))) from None
