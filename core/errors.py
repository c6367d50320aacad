"""The project's one exception hierarchy; every error we raise derives from JanitorError."""

from __future__ import annotations


class JanitorError(Exception):
    """Root of every error ledger-janitor raises on purpose."""


class ConfigurationError(JanitorError):
    """A setting is unknown, malformed or out of range."""


class DecodeError(JanitorError):
    """Bytes that should hold a known wire format do not."""


class MetadataError(JanitorError):
    """The metadata store could not answer; the answer is *unknown*, never *absent*."""


class TransientMetadataError(MetadataError):
    """Connection loss, session expiry or a time-out: worth retrying shortly."""


class LayoutError(MetadataError):
    """A store answered, but holds no Pulsar or BookKeeper layout where the configuration
    points (a wrong store or chroot, a typo): nothing absent in it means "gone". Not
    transient, but a sidecar waits for it rather than exit: the broker may lay it out yet."""


class ConnectionBrokenError(MetadataError):
    """The store's connection broke since what is about to be acted on was read: not retried
    on the new connection (a delete decided on the old one), and so, unknown for now."""


class VersionConflictError(MetadataError):
    """A compare-and-set lost against a concurrent writer."""


class LedgerStorageError(JanitorError):
    """The ledger store refused or failed an operation."""


class TransientLedgerStorageError(LedgerStorageError):
    """A storage failure worth retrying shortly."""


class OffloadOwnershipError(LedgerStorageError):
    """An offloaded ledger's own objects do not prove they belong to the message's topic: they
    name another managed ledger, or none at all. Never retried and never deleted: archived."""


class BrokerError(JanitorError):
    """The Pulsar broker refused or failed an operation."""


class TransientBrokerError(BrokerError):
    """A broker time-out or disconnection, worth retrying shortly."""


class EnqueueError(BrokerError):
    """Phase one failed: the pending deletion was not persisted, so metadata must not change."""
