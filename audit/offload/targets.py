"""Where the tiered-storage audit looks: the offload storage the worker is configured with.

The same settings `deletion.adapters.opening.open_offload_storage` opens for the worker
(Pulsar's own names): `s3ManagedLedgerOffloadBucket` with `...ServiceEndpoint` and `...Region`
for an S3-compatible store, `fileSystemOffloadStorageBasePath` (and `fileSystemURI`) for the
filesystem offloader. Neither set: the audit looks at BookKeeper only, as before.

The targets travel to Spark executors (pickled): plain frozen data, credentials included,
since an executor's environment need not hold the driver's (they are kept out of `repr`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from audit.errors import AuditError
from config import ServiceConfiguration
from core.errors import JanitorError
from deletion.adapters.offload import S3_DRIVERS, FileSystemOffloadStorage, s3_client
from deletion.adapters.offload.s3 import S3Client

S3, FILESYSTEM = "s3", "filesystem"
DEFAULT_S3_DRIVER = "aws-s3"


@dataclass(frozen=True)
class S3Target:
    bucket: str
    endpoint: str | None = None
    region: str | None = None
    driver: str = DEFAULT_S3_DRIVER  # what an enqueued context names (Pulsar's driver name)
    credentials: tuple[str, str, str | None] | None = field(default=None, repr=False)

    def client(self) -> S3Client:
        key, secret, token = self.credentials or (None, None, None)
        client = s3_client(self.endpoint, self.region, access_key_id=key, secret_access_key=secret)
        if token:  # s3_client takes no session token: rebuild with it
            import boto3

            client = boto3.session.Session(
                aws_access_key_id=key, aws_secret_access_key=secret, aws_session_token=token
            ).client("s3", endpoint_url=self.endpoint, region_name=self.region)
        return client


@dataclass(frozen=True)
class FileSystemTarget:
    base_path: str  # absolute


@dataclass(frozen=True)
class OffloadTargets:
    s3: S3Target | None = None
    filesystem: FileSystemTarget | None = None
    default_driver: str | None = None  # managedLedgerOffloadDriver: for contexts naming none

    def describe(self) -> str:
        parts = []
        if self.s3 is not None:
            where = f" at {self.s3.endpoint}" if self.s3.endpoint else ""
            parts.append(f"s3://{self.s3.bucket}{where}")
        if self.filesystem is not None:
            parts.append(f"filesystem {self.filesystem.base_path}")
        return ", ".join(parts)


def offload_targets(config: ServiceConfiguration) -> OffloadTargets | None:
    """The configured offload storage, or None when there is none to audit."""
    s3 = None
    if config.s3_managed_ledger_offload_bucket:
        driver = config.managed_ledger_offload_driver
        s3 = S3Target(
            bucket=config.s3_managed_ledger_offload_bucket,
            endpoint=config.s3_managed_ledger_offload_service_endpoint or None,
            region=config.s3_managed_ledger_offload_region or None,
            driver=driver if driver.lower() in S3_DRIVERS else DEFAULT_S3_DRIVER,
            credentials=_driver_credentials(),
        )
    filesystem = None
    if config.file_system_offload_storage_base_path:
        try:
            storage = FileSystemOffloadStorage.from_config(
                config.file_system_uri, config.file_system_offload_storage_base_path
            )
        except JanitorError as exc:
            raise AuditError(f"tiered storage: {exc}") from exc
        filesystem = FileSystemTarget(str(storage.base_path))
    if s3 is None and filesystem is None:
        return None
    return OffloadTargets(s3, filesystem, config.managed_ledger_offload_driver or None)


def _driver_credentials() -> tuple[str, str, str | None] | None:
    """The driver's credentials from boto3's chain (environment, profile, instance role)."""
    import boto3

    found = boto3.session.Session().get_credentials()
    if found is None:
        return None
    frozen = found.get_frozen_credentials()
    return frozen.access_key, frozen.secret_key, frozen.token
