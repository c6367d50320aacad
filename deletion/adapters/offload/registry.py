"""Choosing the adapter for an offloaded ledger by the driver that offloaded it.

As in Pulsar (OffloadUtils.getOffloadDriverName), the driver is the context's
`driverMetadata.name`, falling back to the configured `managedLedgerOffloadDriver`.
"""

from __future__ import annotations

from deletion.domain.offload_port import (
    FILESYSTEM_DRIVERS,
    S3_DRIVERS,
    UNSUPPORTED_DRIVERS,
    OffloadStorage,
    UnsupportedOffloadDriverError,
    normalize_driver,
)
from deletion.wire.offload_context import decode_offload
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo


def offload_storage_for(
    driver_name: str,
    *,
    s3: OffloadStorage | None = None,
    filesystem: OffloadStorage | None = None,
) -> OffloadStorage:
    """The adapter for a Pulsar driver name; UnsupportedOffloadDriverError when there is none."""
    driver = normalize_driver(driver_name)
    if driver in S3_DRIVERS:
        chosen, setting = s3, "s3ManagedLedgerOffloadBucket / ServiceEndpoint"
    elif driver in FILESYSTEM_DRIVERS:
        chosen, setting = filesystem, "fileSystemURI and the storage base path"
    elif driver in UNSUPPORTED_DRIVERS:
        raise UnsupportedOffloadDriverError(
            f"offload driver {driver_name!r} is not supported yet: only S3-compatible stores"
            f" ({', '.join(sorted(S3_DRIVERS))}) and the local filesystem are"
        )
    else:
        raise UnsupportedOffloadDriverError(f"unknown offload driver {driver_name!r}")
    if chosen is None:
        raise UnsupportedOffloadDriverError(
            f"offload driver {driver_name!r} is not configured (set {setting})"
        )
    return chosen


class OffloadRouter:
    """An OffloadStorage that hands each ledger to the adapter for the driver that offloaded it."""

    def __init__(
        self,
        *,
        s3: OffloadStorage | None = None,
        filesystem: OffloadStorage | None = None,
        default_driver: str | None = None,
    ) -> None:
        self._s3 = s3
        self._filesystem = filesystem
        self._default_driver = default_driver or None

    def delete_offloaded(
        self, ledger_id: int, context: ManagedLedgerInfo.LedgerInfo, managed_ledger_name: str
    ) -> bool:
        driver = decode_offload(ledger_id, context).driver_name or self._default_driver
        if driver is None:
            raise UnsupportedOffloadDriverError(
                f"ledger {ledger_id}: its context names no offload driver and"
                " managedLedgerOffloadDriver is not set"
            )
        storage = offload_storage_for(driver, s3=self._s3, filesystem=self._filesystem)
        return storage.delete_offloaded(ledger_id, context, managed_ledger_name)
