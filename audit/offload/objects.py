"""Listing one share of the offloaded objects: an S3 key prefix, or a filesystem namespace.

Plain Python, run inside Spark partitions (`offload.scan`), each with its own client. Only
objects named as Pulsar's offloaders name a ledger's copy are listed; everything else in the
bucket or directory is none of the audit's business:

- S3 (tiered-storage/jcloud/.../impl/DataBlockUtils.java, `dataBlockOffloadKey` and
  `indexBlockOffloadKey`, used by BlobStoreManagedLedgerOffloader.offload): the data object
  `<uuid>-ledger-<ledgerId>` (BlockAwareSegmentInputStreamImpl's blocks) and the index
  object `<uuid>-ledger-<ledgerId>-index` (OffloadIndexBlockImpl), at the bucket root. The
  streaming offloader's `<uuid>-index` objects hold several ledgers and are left alone.
- Filesystem (tiered-storage/file-system/.../impl/FileSystemManagedLedgerOffloader.java,
  `getStoragePath`/`getDataFilePath`): a MapFile directory `<base>/<managed ledger name>/
  <ledgerId>-<uuid>` holding `data` and `index`.

Each object's metadata is read for attribution (`offload.evidence`). An object that vanishes
between the listing and the read is skipped (it is gone); any other error propagates and
fails the audit: an unreadable store is never "nothing offloaded".
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from audit.errors import AuditError
from audit.offload.evidence import Claim, Evidence, topic_of
from audit.offload.targets import FILESYSTEM, S3, FileSystemTarget, S3Target
from core.errors import DecodeError
from deletion.adapters.offload.s3 import INDEX_PREFIX_BYTES, storage_error
from deletion.wire import index_block, mapfile
from deletion.wire.bookkeeper_metadata import custom_metadata

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
S3_KEY = re.compile(rf"^({_UUID})-ledger-(\d+)(-index)?$")
MAPFILE_DIR = re.compile(rf"^(\d+)-({_UUID})$")
_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})

# schema.OFFLOADED_OBJECT_SCHEMA
ObjectRow = tuple[
    str, str, str, int, str, str, bool, int | None, int | None, str | None, str | None,
    str | None, str | None, str | None,
]  # fmt: skip


def _row(
    store: str, location: str, key: str, ledger_id: int, uuid: str, role: str, complete: bool,
    size: int | None, mtime_ms: int | None, claim: Claim,
) -> ObjectRow:  # fmt: skip
    topic = topic_of(claim.managed_ledger) if claim.managed_ledger else None
    problem = claim.problem
    if claim.managed_ledger is not None and topic is None:
        problem = f"{claim.managed_ledger!r} is not a managed ledger name Pulsar writes"
    return (
        store, location, key, ledger_id, uuid, role, complete, size, mtime_ms,
        claim.managed_ledger if topic else None, str(topic) if topic else None,
        str(topic.namespace) if topic else None, problem, claim.silence,
    )  # fmt: skip


# --- S3 ------------------------------------------------------------------------------------------


def s3_objects(target: S3Target, prefixes: list[str]) -> Iterator[ObjectRow]:
    client: Any = target.client()
    paginator = client.get_paginator("list_objects_v2")
    for prefix in prefixes:
        try:
            for page in paginator.paginate(Bucket=target.bucket, Prefix=prefix):
                for item in page.get("Contents", []):
                    matched = S3_KEY.match(item["Key"])
                    row = _s3_object(client, target.bucket, item, matched) if matched else None
                    if row is not None:
                        yield row
        except (ClientError, BotoCoreError) as exc:
            raise storage_error(exc, f"ListObjectsV2 s3://{target.bucket}/{prefix}*") from exc


def _s3_object(client: Any, bucket: str, item: Any, matched: re.Match[str]) -> ObjectRow | None:
    key, uuid, ledger_id = item["Key"], matched[1], int(matched[2])
    role = "index" if matched[3] else "data"
    evidence = Evidence()
    try:
        head = client.head_object(Bucket=bucket, Key=key)
        evidence.user_metadata(head.get("Metadata") or {})
        if role == "index":
            _index_metadata(client, bucket, key, evidence)
    except ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code", "")) in _MISSING:
            return None  # deleted since it was listed
        raise storage_error(exc, f"reading s3://{bucket}/{key}") from exc
    except BotoCoreError as exc:
        raise storage_error(exc, f"reading s3://{bucket}/{key}") from exc
    mtime_ms = int(item["LastModified"].timestamp() * 1000)
    size = int(item.get("Size", 0))
    return _row(S3, bucket, key, ledger_id, uuid, role, True, size, mtime_ms, evidence.claim())


def _index_metadata(client: Any, bucket: str, key: str, evidence: Evidence) -> None:
    """The ledger metadata at the head of the index object (as `S3OffloadStorage` reads it)."""
    prefix = _read(client, bucket, key, 0, INDEX_PREFIX_BYTES)
    try:
        end = index_block.metadata_end(prefix)
        if end > len(prefix):
            prefix += _read(client, bucket, key, len(prefix), end)
        evidence.ledger_metadata(custom_metadata(index_block.ledger_metadata(prefix)))
    except DecodeError as exc:
        evidence.unreadable(str(exc))


def _read(client: Any, bucket: str, key: str, start: int, end: int) -> bytes:
    try:
        answer = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}")
    except ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code", "")) == "InvalidRange":
            return b""  # shorter than `start`: what there is does not decode
        raise
    body = answer["Body"]
    try:
        data: bytes = body.read(end - start)
    finally:
        body.close()
    return data


# --- filesystem ----------------------------------------------------------------------------------


def namespace_dirs(target: FileSystemTarget) -> list[str]:
    """`tenant/namespace` directories under the base path (the driver's share of the walk)."""
    base = Path(target.base_path)
    if not base.is_dir():
        raise AuditError(f"offload base path {base} is not a directory")
    return sorted(
        f"{tenant.name}/{namespace.name}"
        for tenant in base.iterdir()
        if tenant.is_dir() and not tenant.is_symlink()
        for namespace in tenant.iterdir()
        if namespace.is_dir() and not namespace.is_symlink()
    )


def mapfiles(target: FileSystemTarget, namespaces: list[str]) -> Iterator[ObjectRow]:
    base = Path(target.base_path)
    for namespace in namespaces:
        persistent = base / namespace / "persistent"
        if not persistent.is_dir():
            continue
        for ledger_dir in sorted(persistent.iterdir()):
            if not ledger_dir.is_dir() or ledger_dir.is_symlink():
                continue
            for entry in sorted(ledger_dir.iterdir()):
                matched = MAPFILE_DIR.match(entry.name)
                if matched is None or not entry.is_dir() or entry.is_symlink():
                    continue
                name = f"{namespace}/persistent/{ledger_dir.name}"
                try:
                    row = _mapfile(target, entry, name, matched)
                except FileNotFoundError:
                    continue  # deleted since it was listed
                yield row


def _mapfile(
    target: FileSystemTarget, path: Path, location_name: str, matched: re.Match[str]
) -> ObjectRow:
    sizes, mtimes = 0, 0
    present = set()
    for child in path.iterdir():
        stat = child.stat()
        sizes += stat.st_size
        mtimes = max(mtimes, int(stat.st_mtime * 1000))
        present.add(child.name)
    evidence = Evidence()
    try:
        with open(path / "data", "rb") as stream:
            evidence.ledger_metadata(custom_metadata(mapfile.ledger_metadata(stream)))
    except FileNotFoundError:
        evidence.unreadable("it has no MapFile data file")
    except DecodeError as exc:
        evidence.unreadable(str(exc))
    claim = evidence.claim()
    if claim.managed_ledger is not None and claim.managed_ledger != location_name:
        # The worker looks for a ledger's MapFile under its managed ledger's name.
        named = claim.managed_ledger
        claim = Claim(None, f"its MapFile names {named!r} but lies under {location_name!r}")
    complete = {"data", "index"} <= present
    key = os.path.relpath(path, target.base_path)
    ledger_id, uuid = int(matched[1]), matched[2]
    return _row(
        FILESYSTEM, target.base_path, key, ledger_id, uuid, "mapfile", complete, sizes,
        mtimes or None, claim,
    )  # fmt: skip
