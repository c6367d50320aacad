"""Offloaded ledgers in an S3-compatible blob store (drivers aws-s3, S3, aliyun-oss), via boto3.

Layout (tiered-storage/jcloud/.../impl/DataBlockUtils.java): a ledger offloaded under UUID u is
the data object `<u>-ledger-<ledgerId>` and the index object `<u>-ledger-<ledgerId>-index`, at
the bucket root. `BlobStoreManagedLedgerOffloader.deleteOffloaded` removes both from the bucket
named by the driver metadata's `bucket` (TieredStorageConfiguration.METADATA_FIELD_BUCKET), but
through the blob store the broker was configured with: the metadata's `region` and
`serviceEndpoint` never route the request. Neither do they here, which also means a message
cannot point the janitor, and its credentials, at an endpoint of its choosing.

Before deleting, the objects must prove they are the message's topic's (`ownership.py`): their
user metadata (HeadObject) and the ledger metadata at the head of the index object (a ranged
GetObject, `index_block.py`).
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Collection
from typing import Any, Protocol, runtime_checkable

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from core.errors import DecodeError, LedgerStorageError, TransientLedgerStorageError
from deletion.adapters.offload.ownership import OwnershipProof
from deletion.domain.offload_port import S3_DRIVERS, require_driver
from deletion.wire import index_block
from deletion.wire.bookkeeper_metadata import custom_metadata
from deletion.wire.offload_context import decode_offload
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

# TieredStorageConfiguration.METADATA_FIELD_BUCKET
BUCKET_PROPERTY = "bucket"

_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})
_TRANSIENT_CODES = frozenset(
    {
        "InternalError",
        "OperationAborted",
        "RequestTimeout",
        "RequestTimeTooSkewed",
        "ServiceUnavailable",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
    }
)


# The header and ledger metadata of an index object fit in this, bar unusual ensembles.
INDEX_PREFIX_BYTES = 64 * 1024


@runtime_checkable
class S3Client(Protocol):
    """The calls we make; a boto3 S3 client satisfies it."""

    # boto3's own parameter names.
    def head_object(self, *, Bucket: str, Key: str) -> Any: ...  # noqa: N803

    def get_object(self, *, Bucket: str, Key: str, Range: str) -> Any: ...  # noqa: N803

    def delete_object(self, *, Bucket: str, Key: str) -> object: ...  # noqa: N803


def data_key(ledger_id: int, uuid: str) -> str:
    return f"{uuid}-ledger-{ledger_id}"


def index_key(ledger_id: int, uuid: str) -> str:
    return f"{data_key(ledger_id, uuid)}-index"


def s3_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    *,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
    connect_timeout: float = 5.0,
    read_timeout: float = 30.0,
    max_attempts: int = 3,
    addressing_style: str | None = None,
) -> S3Client:
    """A boto3 client; credentials fall back to boto3's chain, as Pulsar's fall back to AWS's."""
    # Pulsar switches jclouds to path-style requests whenever an endpoint is configured
    # (TieredStorageConfiguration.getOverrides); aliyun-oss needs "virtual" instead.
    style = addressing_style or ("path" if endpoint_url else "auto")
    config = Config(
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"max_attempts": max_attempts, "mode": "standard"},
        s3={"addressing_style": style},
    )
    # A session of our own: boto3's default session is not safe to share between threads.
    client: S3Client = boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url or None,
        region_name=region or None,
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        config=config,
    )
    return client


def storage_error(exc: Exception, action: str) -> LedgerStorageError:
    """Translate a boto3 failure: transient when retrying may help, permanent otherwise."""
    if isinstance(exc, ClientError):
        error: dict[str, Any] = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        message = f"{action}: {code or status} {error.get('Message', '')}".rstrip()
        if code in _TRANSIENT_CODES or status == 429 or status >= 500:
            return TransientLedgerStorageError(message)
        if status == 403:
            message += " (access denied: HeadObject on a missing key needs s3:ListBucket)"
        return LedgerStorageError(message)
    if isinstance(exc, (BotoConnectionError, HTTPClientError)):
        return TransientLedgerStorageError(f"{action}: {exc}")
    return LedgerStorageError(f"{action}: {type(exc).__name__}: {exc}")


class _VanishedError(Exception):
    """The object was there a moment ago."""


class S3OffloadStorage:
    """Deletes a ledger's data and index objects; objects already missing count as success."""

    # Process-wide, so that every adapter instance agrees on who deleted a given ledger.
    _stripes = tuple(threading.Lock() for _ in range(64))

    def __init__(
        self,
        client: S3Client | Callable[[], S3Client] | None = None,
        *,
        default_bucket: str | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        allowed_buckets: Collection[str] | None = None,
    ) -> None:
        """`client` is a boto3 S3 client, or a factory for one (called once, lazily); without
        it one is built from `endpoint_url` and `region`. `default_bucket` serves contexts whose
        driver metadata names no bucket (Pulsar then uses its configured one). `allowed_buckets`,
        when given, refuses any other bucket a message might name."""
        self._client: S3Client | None = None
        self._factory: Callable[[], S3Client]
        if client is None:
            self._factory = lambda: s3_client(endpoint_url, region)
        elif isinstance(client, S3Client):
            self._client = client
        else:
            self._factory = client
        self._client_lock = threading.Lock()
        self._default_bucket = default_bucket or None
        self._allowed = frozenset(allowed_buckets) if allowed_buckets is not None else None

    def delete_offloaded(
        self, ledger_id: int, context: ManagedLedgerInfo.LedgerInfo, managed_ledger_name: str
    ) -> bool:
        offloaded = decode_offload(ledger_id, context)
        require_driver(offloaded.driver_name, S3_DRIVERS, "S3")
        bucket = offloaded.property(BUCKET_PROPERTY) or self._default_bucket
        if bucket is None:
            raise LedgerStorageError(
                f"ledger {ledger_id}: its driver metadata names no bucket and no default bucket"
                " is configured (s3ManagedLedgerOffloadBucket)"
            )
        if self._allowed is not None and bucket not in self._allowed:
            raise LedgerStorageError(f"ledger {ledger_id}: bucket {bucket!r} is not allowed")
        keys = (data_key(ledger_id, offloaded.uuid), index_key(ledger_id, offloaded.uuid))
        client = self._get_client()
        # HEAD then DELETE is not atomic: without the lock, concurrent callers could all see
        # the objects and all report having deleted them.
        with self._stripe(bucket, keys[0]):
            heads = [self._head(client, bucket, key) for key in keys]
            if all(head is None for head in heads):
                # A missing bucket also answers HEAD with a bare 404: DeleteObject names it,
                # rather than every ledger reading as already gone.
                for key in keys:
                    self._call("DeleteObject", client.delete_object, bucket, key)
                return False
            proof = OwnershipProof(ledger_id, managed_ledger_name)
            for key, head in zip(keys, heads, strict=True):
                if head is not None:
                    proof.user_metadata(f"s3://{bucket}/{key}", head.get("Metadata") or {})
            if heads[1] is not None:
                self._prove_by_index(proof, client, bucket, keys[1])
            proof.require()
            for key in keys:
                self._call("DeleteObject", client.delete_object, bucket, key)
        return True

    def _prove_by_index(
        self, proof: OwnershipProof, client: S3Client, bucket: str, key: str
    ) -> None:
        where = f"s3://{bucket}/{key}"
        try:
            prefix = self._read(client, bucket, key, 0, INDEX_PREFIX_BYTES)
            end = index_block.metadata_end(prefix)
            if end > len(prefix):
                prefix += self._read(client, bucket, key, len(prefix), end)
            metadata = index_block.ledger_metadata(prefix)
        except DecodeError as exc:
            proof.unreadable(where, str(exc))
        except _VanishedError as exc:
            # Most likely another worker deleting the same ledger: look again from the HEADs.
            raise TransientLedgerStorageError(f"{where} vanished while being read") from exc
        else:
            proof.ledger_metadata(where, custom_metadata(metadata))

    @staticmethod
    def _head(client: S3Client, bucket: str, key: str) -> dict[str, Any] | None:
        return head_object(client, bucket, key)

    @staticmethod
    def _read(client: S3Client, bucket: str, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the object (fewer if it is shorter)."""
        action = f"GetObject s3://{bucket}/{key} bytes {start}-{end - 1}"
        try:
            body = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}")
            try:
                data: bytes = body["Body"].read(end - start)
            finally:
                body["Body"].close()
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _MISSING_CODES:
                raise _VanishedError from exc
            if code == "InvalidRange":  # the object is shorter than `start`
                return b""
            raise storage_error(exc, action) from exc
        except BotoCoreError as exc:
            raise storage_error(exc, action) from exc
        return data

    def _get_client(self) -> S3Client:
        with self._client_lock:
            if self._client is None:
                try:
                    self._client = self._factory()
                except (BotoCoreError, ValueError) as exc:
                    raise storage_error(exc, "creating the S3 client") from exc
            return self._client

    @classmethod
    def _stripe(cls, bucket: str, key: str) -> threading.Lock:
        return cls._stripes[zlib.crc32(f"{bucket}/{key}".encode()) % len(cls._stripes)]

    @staticmethod
    def _call(name: str, operation: Callable[..., object], bucket: str, key: str) -> bool:
        """DeleteObject; False when S3 says the key is not there."""
        try:
            operation(Bucket=bucket, Key=key)
        except ClientError as exc:
            # S3 deletes a missing key with 204; some clones say NoSuchKey.
            if str(exc.response.get("Error", {}).get("Code", "")) in _MISSING_CODES:
                return False
            raise storage_error(exc, f"{name} s3://{bucket}/{key}") from exc
        except BotoCoreError as exc:
            raise storage_error(exc, f"{name} s3://{bucket}/{key}") from exc
        return True


def head_object(client: Any, bucket: str, key: str) -> dict[str, Any] | None:
    """The object's HeadObject answer, None when S3 says it is not there."""
    try:
        head: dict[str, Any] = client.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code", "")) in _MISSING_CODES:
            return None
        raise storage_error(exc, f"HeadObject s3://{bucket}/{key}") from exc
    except BotoCoreError as exc:
        raise storage_error(exc, f"HeadObject s3://{bucket}/{key}") from exc
    return head
