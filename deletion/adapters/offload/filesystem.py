"""Offloaded ledgers on a local filesystem (driver "filesystem"), deleted as Pulsar deletes them.

Layout (tiered-storage/file-system/.../impl/FileSystemManagedLedgerOffloader.java): each ledger
is a Hadoop MapFile, a directory holding `data` and `index` (and their `.crc` files), at
`<storageBasePath>/<managedLedgerName>/<ledgerId>-<uuid>`. storageBasePath is Hadoop's
`hadoop.tmp.dir` from the file that fileSystemProfilePath names
(conf/filesystem_offload_core_site.xml); the offloader records it as the driver property
`storageBasePath`. `deleteOffloaded` is a recursive delete of that directory, the name coming
from the `ManagedLedgerName` property ManagedLedgerImpl adds at deletion time; here the caller
passes it in.

Before deleting, the MapFile must prove it is the message's topic's (`ownership.py`): the
ledger metadata the offloader stores at its key -1 (`mapfile.py`) must name the managed ledger.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
import uuid as uuid_lib
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from core.errors import DecodeError, LedgerStorageError, TransientLedgerStorageError
from deletion.adapters.offload.ownership import OwnershipProof
from deletion.domain.offload_port import FILESYSTEM_DRIVERS, require_driver
from deletion.wire import mapfile
from deletion.wire.bookkeeper_metadata import custom_metadata
from deletion.wire.offload_context import OffloadedLedger, decode_offload
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

STORAGE_BASE_PATH_PROPERTY = "storageBasePath"

# Worth retrying: an NFS hiccup or a busy file, not a permission or a read-only mount.
_TRANSIENT_ERRNOS = frozenset(
    {errno.EAGAIN, errno.EBUSY, errno.EINTR, errno.EIO, errno.ESTALE, errno.ETIMEDOUT}
)


def local_path(value: str | os.PathLike[str]) -> Path:
    """A plain path or a `file:` URI; any other scheme (hdfs://, s3a://, ...) is refused."""
    if not isinstance(value, str):
        return Path(value)
    parts = urlsplit(value)
    if parts.scheme == "":
        return Path(value)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(unquote(parts.path) or "/")
    raise LedgerStorageError(
        f"{value!r}: only local filesystem paths are supported (a plain path or file://);"
        " HDFS and other Hadoop filesystems are not"
    )


class FileSystemOffloadStorage:
    """Deletes a ledger's MapFile directory under `base_path`; already missing counts as success."""

    def __init__(self, base_path: str | os.PathLike[str], *, verify_base_path: bool = True) -> None:
        """`verify_base_path` refuses a ledger whose recorded absolute storageBasePath is not
        `base_path`: looking in the wrong place would report it gone while it leaks."""
        self._base = Path(os.path.abspath(local_path(base_path)))
        self._verify_base_path = verify_base_path

    @classmethod
    def from_config(
        cls,
        file_system_uri: str | None,
        storage_base_path: str | os.PathLike[str],
        *,
        verify_base_path: bool = True,
    ) -> FileSystemOffloadStorage:
        """From Pulsar's `fileSystemURI` (Hadoop's fs.defaultFS) and the base path it resolves."""
        if file_system_uri and urlsplit(file_system_uri).scheme != "file":
            raise LedgerStorageError(
                f"fileSystemURI {file_system_uri!r}: only local filesystems (file:///) are"
                " supported; HDFS and other Hadoop filesystems are not"
            )
        return cls(storage_base_path, verify_base_path=verify_base_path)

    @property
    def base_path(self) -> Path:
        return self._base

    def ledger_path(self, ledger_id: int, uuid: str, managed_ledger_name: str) -> Path:
        """Where Pulsar put the ledger; refuses a name that would lead outside the base path."""
        parts = managed_ledger_name.split("/")
        if (
            not managed_ledger_name
            or "\x00" in managed_ledger_name
            or any(part in ("", ".", "..") for part in parts)
        ):
            raise LedgerStorageError(
                f"managed ledger name {managed_ledger_name!r} is not a plain relative path"
                f" under {self._base}"
            )
        path = self._base.joinpath(*parts, f"{ledger_id}-{uuid}")
        # A symlinked directory on the way could still lead elsewhere.
        if not path.parent.resolve().is_relative_to(self._base.resolve()):
            raise LedgerStorageError(f"{path} leads outside {self._base}")
        return path

    def delete_offloaded(
        self, ledger_id: int, context: ManagedLedgerInfo.LedgerInfo, managed_ledger_name: str
    ) -> bool:
        offloaded = decode_offload(ledger_id, context)
        require_driver(offloaded.driver_name, FILESYSTEM_DRIVERS, "filesystem")
        self._check_recorded_base(offloaded)
        if not self._base.is_dir():
            # Unmounted or misconfigured: every ledger would look already deleted.
            raise LedgerStorageError(f"offload base path {self._base} is not a directory")
        target = self.ledger_path(ledger_id, offloaded.uuid, managed_ledger_name)
        if not self._prove(target, ledger_id, managed_ledger_name):
            self._purge_tombstones(target)
            return False
        # Renaming first makes the deletion atomic: of concurrent callers exactly one wins
        # the rename, and a crash leaves a tombstone, never a half-deleted MapFile.
        tombstone = target.with_name(f".{target.name}.deleting-{uuid_lib.uuid4().hex}")
        try:
            os.rename(target, tombstone)
        except FileNotFoundError:
            self._purge_tombstones(target)
            return False
        except OSError as exc:
            raise _storage_error(exc, f"renaming {target}") from exc
        _remove(tombstone)
        return True

    @staticmethod
    def _prove(target: Path, ledger_id: int, managed_ledger_name: str) -> bool:
        """OffloadOwnershipError unless the MapFile names the managed ledger; False when it
        is gone (a concurrent caller may have just renamed it away)."""
        proof = OwnershipProof(ledger_id, managed_ledger_name)
        try:
            with open(target / "data", "rb") as stream:
                metadata = mapfile.ledger_metadata(stream)
        except FileNotFoundError:
            if not os.path.lexists(target):
                return False
            proof.unreadable(str(target), "it has no MapFile data file")
        except DecodeError as exc:
            proof.unreadable(str(target / "data"), str(exc))
        except (IsADirectoryError, NotADirectoryError) as exc:
            proof.unreadable(str(target), f"it is not a MapFile directory: {exc.strerror}")
        except OSError as exc:
            raise _storage_error(exc, f"reading {target / 'data'}") from exc
        else:
            proof.ledger_metadata(str(target), custom_metadata(metadata))
        proof.require()
        return True

    def _check_recorded_base(self, offloaded: OffloadedLedger) -> None:
        recorded = offloaded.property(STORAGE_BASE_PATH_PROPERTY)
        # Pulsar writes "null" when hadoop.tmp.dir is unset; a relative path (the shipped
        # default is "pulsar") is relative to the broker's working directory, unknown here.
        if not self._verify_base_path or recorded is None or recorded == "null":
            return
        path = local_path(recorded)
        if path.is_absolute() and path.resolve() != self._base.resolve():
            raise LedgerStorageError(
                f"ledger {offloaded.ledger_id} was offloaded under {recorded}, but this janitor"
                f" deletes under {self._base}"
            )

    def _purge_tombstones(self, target: Path) -> None:
        """Finish deletions that a crash interrupted after the rename."""
        try:
            leftovers = list(target.parent.glob(f".{target.name}.deleting-*"))
        except OSError as exc:
            raise _storage_error(exc, f"listing {target.parent}") from exc
        for leftover in leftovers:
            _remove(leftover)


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            if sys.version_info >= (3, 12):
                shutil.rmtree(path, onexc=_ignore_missing_exc)
            else:
                shutil.rmtree(path, onerror=_ignore_missing)
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        raise _storage_error(exc, f"removing {path}") from exc


def _ignore_missing(
    function: Any, path: str, exc_info: tuple[type[BaseException], BaseException, TracebackType]
) -> None:
    _ignore_missing_exc(function, path, exc_info[1])


def _ignore_missing_exc(function: Any, path: str, exc: BaseException) -> None:
    # Another caller may be removing the same tombstone at the same time.
    if not isinstance(exc, FileNotFoundError):
        raise exc


def _storage_error(exc: OSError, action: str) -> LedgerStorageError:
    message = f"{action}: {exc.strerror or exc}"
    if exc.errno in _TRANSIENT_ERRNOS:
        return TransientLedgerStorageError(message)
    return LedgerStorageError(message)
