"""Proof, from an offloaded ledger's own objects, that they belong to the message's topic.

Once its BookKeeper copy is gone, nothing but the offloaded objects says whose a ledger was; a
message naming another tenant's ledger id and offload UUID must not get them deleted. What
Pulsar records there (apache/pulsar, read at master):

- **The ledger's BookKeeper metadata, custom metadata included.** Both offloaders embed
  `OffloadUtils.buildLedgerMetadataFormat(readHandle.getLedgerMetadata())` (managed-ledger/.../
  offload/OffloadUtils.java): the blob-store offloader as the "segment metadata" of the index
  object (tiered-storage/jcloud/.../impl/OffloadIndexBlockImpl.java, `toStream`), the filesystem
  offloader as the value of key -1 in the MapFile (tiered-storage/file-system/.../impl/
  FileSystemManagedLedgerOffloader.java, `LedgerReader.run`, `METADATA_KEY_INDEX`). Every data
  ledger a managed ledger creates carries `LedgerMetadataUtils.buildBaseManagedLedgerMetadata
  (name)` (managed-ledger/.../impl/LedgerMetadataUtils.java): `application=pulsar`,
  `component=managed-ledger`, `pulsar/managed-ledger=<managed ledger name>` - the rule
  `deletion.domain.decision.check_ownership` applies to the BookKeeper copy.
- **Blob user metadata `ManagedLedgerName`** (S3 lower-cases it), since apache/pulsar#14907
  (March 2022, Pulsar 2.11): `BlobStoreManagedLedgerOffloader.offload` adds the `extraMetadata` that
  `ManagedLedgerImpl.offloadLoop` passes, `Map.of("ManagedLedgerName", name)`, to both objects'
  user metadata, with `role` (data/index), and the broker's `s3managedledgeroffloadersoftware
  version`, `...gitsha` and `pulsarclustername` (PulsarService.createManagedLedgerOffloader);
  `DataBlockUtils.addVersionInfo` adds `s3managedledgeroffloaderformatversion=1`. Older releases
  wrote only the version keys: for them the index's embedded metadata is the only proof.

Neither names the ledger id: that is in the object key (`<uuid>-ledger-<id>`) and the MapFile
directory name (`<id>-<uuid>`), which the adapters derive from the id, so they cannot disagree.

Every piece of evidence found must name the message's managed ledger, and at least one must
exist; otherwise `OffloadOwnershipError` (archive, never delete). So a ledger whose embedded
metadata names no managed ledger (created before Pulsar wrote custom metadata) is archived as
unprovable, unless it is on S3 and was offloaded by a release that wrote `ManagedLedgerName`.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.errors import OffloadOwnershipError

# Blob user metadata: jclouds sends the key as given, S3 stores it lower-cased.
USER_METADATA_MANAGED_LEDGER = "managedledgername"

# LedgerMetadataUtils, for a managed ledger's data ledgers (cursor ledgers add pulsar/cursor).
APPLICATION, PULSAR = "application", "pulsar"
COMPONENT, MANAGED_LEDGER = "component", "managed-ledger"
MANAGED_LEDGER_NAME = "pulsar/managed-ledger"
CURSOR_NAME = "pulsar/cursor"


def user_metadata_name(metadata: Mapping[str, str]) -> str | None:
    """The managed ledger a blob's user metadata names; keys compared case-insensitively, as
    Pulsar's own scanner does (OffloaderObjectsScannerUtils)."""
    return {key.lower(): value for key, value in metadata.items()}.get(USER_METADATA_MANAGED_LEDGER)


def ledger_metadata_name(custom: Mapping[str, bytes]) -> tuple[str | None, str | None]:
    """(the managed ledger embedded BookKeeper custom metadata names, or None; why that
    metadata is not a managed ledger's data ledger's, or None). A problem is told only when a
    name is given."""
    named = _text(custom.get(MANAGED_LEDGER_NAME))
    if named is None:
        return None, None
    application, component = _text(custom.get(APPLICATION)), _text(custom.get(COMPONENT))
    if application != PULSAR or component != MANAGED_LEDGER or CURSOR_NAME in custom:
        return named, (
            f"application={application!r}, component={component!r}, cursor={CURSOR_NAME in custom}"
        )
    return named, None


class OwnershipProof:
    """Evidence gathered from one offloaded ledger's objects; `require` judges it."""

    def __init__(self, ledger_id: int, managed_ledger_name: str) -> None:
        self._ledger_id = ledger_id
        self._expected = managed_ledger_name
        self._proofs: list[str] = []
        self._conflicts: list[str] = []
        self._silent: list[str] = []

    def user_metadata(self, where: str, metadata: Mapping[str, str]) -> None:
        """A blob's user metadata."""
        named = user_metadata_name(metadata)
        if named is None:
            self._silent.append(f"{where} has no ManagedLedgerName user metadata")
        else:
            self._claim(where, "user metadata ManagedLedgerName", named)

    def ledger_metadata(self, where: str, custom: Mapping[str, bytes]) -> None:
        """The BookKeeper custom metadata embedded in an offloaded copy."""
        named, problem = ledger_metadata_name(custom)
        if named is None:
            self._silent.append(f"{where}: its ledger metadata names no managed ledger")
            return
        if problem is not None:
            self._conflicts.append(
                f"{where}: its ledger metadata ({problem}) is not that of a"
                " managed ledger's data ledger"
            )
        self._claim(where, f"ledger metadata {MANAGED_LEDGER_NAME}", named)

    def unreadable(self, where: str, reason: str) -> None:
        self._silent.append(f"{where} is unreadable: {reason}")

    def require(self) -> None:
        """Raise unless some evidence names the message's managed ledger and none other does."""
        ledger = f"offloaded ledger {self._ledger_id}"
        if self._conflicts:
            raise OffloadOwnershipError(
                f"{ledger} does not belong to {self._expected}: {'; '.join(self._conflicts)}"
            )
        if not self._proofs:
            raise OffloadOwnershipError(
                f"cannot prove that {ledger} belongs to {self._expected}:"
                f" {'; '.join(self._silent) or 'nothing to read'}"
            )

    def _claim(self, where: str, what: str, named: str) -> None:
        if named == self._expected:
            self._proofs.append(where)
        else:
            self._conflicts.append(f"{where}: {what} is {named!r}")


def _text(value: bytes | None) -> str | None:
    # Pulsar writes String.getBytes(UTF_8); anything else decodes to a name no topic has.
    return None if value is None else value.decode("utf-8", "replace")
