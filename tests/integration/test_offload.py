"""Offloaded ledgers: their context in the message and in LedgerInfo (Java's UUIDs, maps,
undecidable and incomplete contexts), and the driver choosing the adapter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.errors import DecodeError
from deletion.adapters.offload import (
    FileSystemOffloadStorage,
    IncompleteOffloadError,
    OffloadRouter,
    S3OffloadStorage,
    UnsupportedOffloadDriverError,
    decode_offload,
    java_uuid,
    java_uuid_bits,
    offload_context,
    offload_storage_for,
    parse_ledger_info,
)
from deletion.adapters.offload.s3 import S3Client
from deletion.domain.message import (
    LedgerComponent,
    LedgerType,
    PendingDeleteLedgerInfo,
    decode,
    encode,
)
from deletion.domain.topics import TopicName
from harness.offload_objects import plant_s3
from tests.integration.offload_rig import (
    ML_NAME,
    UID,
    UUID_VECTORS,
    LedgerInfo,
    _no_offload_context,
    _no_uid,
    _streaming,
    bucket,
    ctx,
    fs_ctx,
    keys,
    mapfile,
    s3,
)

__all__ = ["bucket", "s3"]  # the fixtures


@pytest.mark.parametrize(("msb", "lsb", "expected"), UUID_VECTORS)
def test_java_uuid_vectors(msb: int, lsb: int, expected: str) -> None:
    assert java_uuid(msb, lsb) == expected
    assert java_uuid_bits(expected) == (msb, lsb)


@pytest.mark.parametrize(("msb", "lsb"), [(2**63, 0), (0, -(2**63) - 1)])
def test_java_uuid_rejects_halves_outside_int64(msb: int, lsb: int) -> None:
    with pytest.raises(DecodeError):
        java_uuid(msb, lsb)


def test_context_round_trips_through_the_avro_message() -> None:
    context = offload_context(7, UID, "filesystem", {"storageBasePath": "/data", "k": "v"})
    message = PendingDeleteLedgerInfo(
        TopicName.parse("public/default/t"),
        LedgerComponent.MANAGED_LEDGER,
        LedgerType.OFFLOAD_LEDGER,
        7,
        context=context,
    )
    info = decode(encode(message)).ledger_info
    assert info is not None
    offloaded = decode_offload(7, info)
    assert (offloaded.uuid, offloaded.driver_name) == (UID, "filesystem")
    assert dict(offloaded.properties) == {"storageBasePath": "/data", "k": "v"}


def test_repeated_property_keeps_the_last_like_a_java_hashmap() -> None:
    info = ctx(7, bucket="first")
    info.offloadContext.driverMetadata.properties.add(key="bucket", value="second")
    assert decode_offload(7, info).property("bucket") == "second"


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (_no_offload_context, "no offloadContext"),
        (_no_uid, "no uid"),
        (_streaming, "streaming"),
        (lambda: ctx(8), "describes ledger 8"),
    ],
)
def test_undecidable_contexts_are_decode_errors(
    build: Callable[[], LedgerInfo], fragment: str
) -> None:
    with pytest.raises(DecodeError, match=fragment):
        decode_offload(7, build())


def test_incomplete_offload_is_refused() -> None:
    info = parse_ledger_info(offload_context(7, UID, "aws-s3", {}, complete=False))
    with pytest.raises(IncompleteOffloadError, match="not complete"):
        decode_offload(7, info)
    info.offloadContext.ClearField("complete")
    with pytest.raises(IncompleteOffloadError):
        decode_offload(7, info)


def test_corrupt_context_bytes_are_a_decode_error() -> None:
    with pytest.raises(DecodeError):
        parse_ledger_info(b"\x08")


def test_driver_names_choose_the_adapter(tmp_path: Path, s3: S3Client) -> None:
    s3_storage, fs_storage = S3OffloadStorage(s3), FileSystemOffloadStorage(tmp_path)
    for name in ("aws-s3", "S3", "AWS-S3", "aliyun-oss"):
        assert offload_storage_for(name, s3=s3_storage, filesystem=fs_storage) is s3_storage
    assert offload_storage_for("filesystem", s3=s3_storage, filesystem=fs_storage) is fs_storage
    for name, match in [
        ("google-cloud-storage", "not supported yet"),
        ("azureblob", "not supported yet"),
        ("tape", "unknown"),
    ]:
        with pytest.raises(UnsupportedOffloadDriverError, match=match):
            offload_storage_for(name, s3=s3_storage, filesystem=fs_storage)
    with pytest.raises(UnsupportedOffloadDriverError, match="not configured"):
        offload_storage_for("filesystem", s3=s3_storage)


def test_router_follows_the_context_then_the_default(
    tmp_path: Path, s3: S3Client, bucket: str
) -> None:
    plant_s3(s3, bucket, 7, UID, ML_NAME, objects=["data"])
    mapfile(tmp_path, ML_NAME, 8)
    mapfile(tmp_path, ML_NAME, 9)
    fs_storage = FileSystemOffloadStorage(tmp_path)
    router = OffloadRouter(s3=S3OffloadStorage(s3), filesystem=fs_storage)
    assert router.delete_offloaded(7, ctx(7, bucket=bucket), ML_NAME) is True
    assert router.delete_offloaded(8, fs_ctx(8), ML_NAME) is True
    nameless = fs_ctx(9)
    nameless.offloadContext.ClearField("driverMetadata")
    with pytest.raises(UnsupportedOffloadDriverError, match="names no offload driver"):
        router.delete_offloaded(9, nameless, ML_NAME)
    defaulted = OffloadRouter(filesystem=fs_storage, default_driver="filesystem")
    assert defaulted.delete_offloaded(9, nameless, ML_NAME) is True
    assert keys(s3, bucket) == set()
