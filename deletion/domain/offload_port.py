"""The port for offloaded ledgers and the driver names Pulsar writes into their metadata.

Driver names are Pulsar's own (pulsar-common/.../policies/data/OffloadPoliciesImpl.java,
DRIVER_NAMES; tiered-storage/jcloud/.../provider/JCloudBlobStoreProvider.java). Pulsar compares
the jclouds ones case-insensitively, so we do too.
"""

from __future__ import annotations

from typing import Protocol

from core.errors import LedgerStorageError
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

# "S3" is the generic S3-API driver (an endpoint is required); "aliyun-oss" speaks the S3 API too.
S3_DRIVERS = frozenset({"aws-s3", "s3", "aliyun-oss"})
FILESYSTEM_DRIVERS = frozenset({"filesystem"})
# Known to Pulsar, but their objects cannot be reached through the S3 API.
UNSUPPORTED_DRIVERS = frozenset({"google-cloud-storage", "azureblob", "transient"})


class UnsupportedOffloadDriverError(LedgerStorageError):
    """The ledger's offload driver is one this janitor cannot delete from, or is not set up for."""


class OffloadStorage(Protocol):
    """Where offloaded ledgers live; deletion is idempotent."""

    def delete_offloaded(
        self, ledger_id: int, context: ManagedLedgerInfo.LedgerInfo, managed_ledger_name: str
    ) -> bool:
        """Delete what Pulsar offloaded for the ledger; False when it was already gone.

        `context` is the ledger's `LedgerInfo` (the message's `context`), and
        `managed_ledger_name` is `{tenant}/{ns}/persistent/{encoded local name}`. Raises
        `OffloadOwnershipError`, deleting nothing, unless the offloaded objects themselves
        prove they are that managed ledger's.
        """
        ...


def normalize_driver(name: str) -> str:
    return name.strip().lower()


def require_driver(driver_name: str | None, accepted: frozenset[str], adapter: str) -> None:
    """Refuse a context written by another driver: its objects are not where this adapter looks.

    A context without a driver name is accepted: Pulsar then falls back to the configured
    driver (OffloadUtils.getOffloadDriverName), which is what chose this adapter.
    """
    if driver_name is not None and normalize_driver(driver_name) not in accepted:
        raise UnsupportedOffloadDriverError(
            f"ledger was offloaded by driver {driver_name!r}, which the {adapter} adapter"
            f" does not handle (it handles {', '.join(sorted(accepted))})"
        )
