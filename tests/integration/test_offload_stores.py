"""The offload adapters on real stores: S3 (moto's server) and a filesystem offloader's MapFile
directories; what each deletes, refuses, and how errors are classed."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from core.errors import LedgerStorageError, TransientLedgerStorageError
from deletion.adapters.offload import (
    FileSystemOffloadStorage,
    IncompleteOffloadError,
    S3OffloadStorage,
    UnsupportedOffloadDriverError,
    data_key,
    offload_context,
    parse_ledger_info,
)
from deletion.adapters.offload.s3 import S3Client, storage_error
from harness.offload_objects import plant_s3
from ledger_janitor.demo.embedded import free_port
from tests.integration.offload_rig import (
    ML_NAME,
    UID,
    bucket,
    ctx,
    fast_client,
    fs_ctx,
    keys,
    mapfile,
    put,
    run_concurrently,
    s3,
)

__all__ = ["bucket", "s3"]  # the fixtures


def test_s3_deletes_data_and_index_and_nothing_else(s3: S3Client, bucket: str) -> None:
    other = str(uuid.uuid4())
    mine = plant_s3(s3, bucket, 7, UID, ML_NAME)
    assert mine == {f"{UID}-ledger-7", f"{UID}-ledger-7-index"}
    untouched = plant_s3(s3, bucket, 8, UID, ML_NAME) | plant_s3(s3, bucket, 7, other, ML_NAME)
    put(s3, bucket, f"{UID}-ledger-70")
    untouched.add(f"{UID}-ledger-70")
    storage = S3OffloadStorage(s3)
    assert storage.delete_offloaded(7, ctx(7, bucket=bucket), ML_NAME) is True
    assert keys(s3, bucket) == untouched
    assert storage.delete_offloaded(7, ctx(7, bucket=bucket), ML_NAME) is False


def test_s3_index_left_by_a_crash_is_still_deleted(s3: S3Client, bucket: str) -> None:
    plant_s3(s3, bucket, 7, UID, ML_NAME, objects=["index"])
    assert S3OffloadStorage(s3).delete_offloaded(7, ctx(7, bucket=bucket), ML_NAME) is True
    assert keys(s3, bucket) == set()


def test_s3_bucket_comes_from_metadata_else_the_default(s3: S3Client, bucket: str) -> None:
    plant_s3(s3, bucket, 7, UID, ML_NAME, objects=["data"])
    plant_s3(s3, bucket, 8, UID, ML_NAME, objects=["data"])
    storage = S3OffloadStorage(s3, default_bucket="not-this-one")
    assert storage.delete_offloaded(7, ctx(7, bucket=bucket), ML_NAME) is True
    fallback = S3OffloadStorage(s3, default_bucket=bucket)
    assert fallback.delete_offloaded(8, ctx(8, driver="S3", bucket=""), ML_NAME) is True
    assert keys(s3, bucket) == set()
    with pytest.raises(LedgerStorageError, match="no bucket"):
        S3OffloadStorage(s3).delete_offloaded(8, ctx(8), ML_NAME)


def test_s3_missing_bucket_is_a_permanent_error(s3: S3Client) -> None:
    with pytest.raises(LedgerStorageError, match="NoSuchBucket") as raised:
        S3OffloadStorage(s3).delete_offloaded(7, ctx(7, bucket="no-such-bucket-here"), ML_NAME)
    assert not isinstance(raised.value, TransientLedgerStorageError)


def test_s3_unreachable_endpoint_is_transient() -> None:
    storage = S3OffloadStorage(lambda: fast_client(f"http://127.0.0.1:{free_port()}"))
    with pytest.raises(TransientLedgerStorageError):
        storage.delete_offloaded(7, ctx(7, bucket="any-bucket"), ML_NAME)


def test_s3_refuses_what_it_must_not_touch(s3: S3Client, bucket: str) -> None:
    put(s3, bucket, data_key(7, UID))
    guarded = S3OffloadStorage(s3, allowed_buckets={"only-this"})
    with pytest.raises(LedgerStorageError, match="not allowed"):
        guarded.delete_offloaded(7, ctx(7, bucket=bucket), ML_NAME)
    with pytest.raises(UnsupportedOffloadDriverError):
        S3OffloadStorage(s3).delete_offloaded(7, ctx(7, driver="filesystem"), ML_NAME)
    incomplete = parse_ledger_info(
        offload_context(7, UID, "aws-s3", {"bucket": bucket}, complete=False)
    )
    with pytest.raises(IncompleteOffloadError):
        S3OffloadStorage(s3).delete_offloaded(7, incomplete, ML_NAME)
    assert keys(s3, bucket) == {data_key(7, UID)}


def test_s3_concurrent_deletes_report_exactly_one_deletion(
    moto_endpoint: str, bucket: str, s3: S3Client
) -> None:
    plant_s3(s3, bucket, 7, UID, ML_NAME)
    storages = [S3OffloadStorage(fast_client(moto_endpoint)) for _ in range(4)]
    turn = iter(storages)
    lock = threading.Lock()

    def delete() -> bool:
        with lock:
            storage = next(turn)
        return storage.delete_offloaded(7, ctx(7, bucket=bucket), ML_NAME)

    results = run_concurrently(delete)
    assert sorted(results, key=str) == [False, False, False, True]
    assert keys(s3, bucket) == set()


@pytest.mark.parametrize(
    ("code", "status", "transient"),
    [
        ("AccessDenied", 403, False),
        ("InvalidAccessKeyId", 403, False),
        ("SlowDown", 503, True),
        ("InternalError", 500, True),
        ("TooManyRequests", 429, True),
    ],
)
def test_s3_error_classification(code: str, status: int, transient: bool) -> None:
    response = {
        "Error": {"Code": code, "Message": "m"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    error = storage_error(ClientError(response, "DeleteObject"), "DeleteObject s3://b/k")
    assert isinstance(error, TransientLedgerStorageError) is transient
    assert code in str(error)


def test_fs_deletes_the_mapfile_directory_only(tmp_path: Path) -> None:
    mine = mapfile(tmp_path, ML_NAME, 7)
    siblings = [mapfile(tmp_path, ML_NAME, 8), mapfile(tmp_path, ML_NAME, 7, str(uuid.uuid4()))]
    storage = FileSystemOffloadStorage(tmp_path)
    assert storage.ledger_path(7, UID, ML_NAME) == mine
    assert storage.delete_offloaded(7, fs_ctx(7), ML_NAME) is True
    assert not mine.exists()
    assert all(sibling.is_dir() for sibling in siblings)
    assert sorted(p.name for p in mine.parent.iterdir()) == sorted(s.name for s in siblings)
    assert storage.delete_offloaded(7, fs_ctx(7), ML_NAME) is False


@pytest.mark.parametrize(
    "ml_name", ["../outside", "/etc", "public/../../outside", "public//x", "", "a/./b"]
)
def test_fs_refuses_names_that_escape_the_base(tmp_path: Path, ml_name: str) -> None:
    base = tmp_path / "base"
    base.mkdir()
    victim = mapfile(tmp_path, "outside", 7)
    with pytest.raises(LedgerStorageError, match="not a plain relative path"):
        FileSystemOffloadStorage(base).delete_offloaded(7, fs_ctx(7), ml_name)
    assert victim.is_dir()


def test_fs_refuses_a_symlink_out_of_the_base(tmp_path: Path) -> None:
    base = tmp_path / "base"
    (base / "public" / "default").mkdir(parents=True)
    victim = mapfile(tmp_path / "elsewhere", "t", 7)
    os.symlink(victim.parent, base / "public" / "default" / "persistent")
    with pytest.raises(LedgerStorageError, match="outside"):
        FileSystemOffloadStorage(base).delete_offloaded(7, fs_ctx(7), "public/default/persistent")
    assert victim.is_dir()


def test_fs_only_local_paths(tmp_path: Path) -> None:
    for uri in ("hdfs://namenode:8020/pulsar", "s3a://bucket/x"):
        with pytest.raises(LedgerStorageError, match="only local"):
            FileSystemOffloadStorage(uri)
    with pytest.raises(LedgerStorageError, match="only local"):
        FileSystemOffloadStorage.from_config("hdfs://namenode:8020", tmp_path)
    mapfile(tmp_path, ML_NAME, 7)
    storage = FileSystemOffloadStorage.from_config("file:///", f"file://{tmp_path}")
    assert storage.base_path == tmp_path
    assert storage.delete_offloaded(7, fs_ctx(7), ML_NAME) is True


def test_fs_recorded_base_path_must_match(tmp_path: Path) -> None:
    directory = mapfile(tmp_path, ML_NAME, 7)
    storage = FileSystemOffloadStorage(tmp_path)
    with pytest.raises(LedgerStorageError, match="offloaded under /somewhere/else"):
        storage.delete_offloaded(7, fs_ctx(7, storageBasePath="/somewhere/else"), ML_NAME)
    assert directory.is_dir()
    lenient = FileSystemOffloadStorage(tmp_path, verify_base_path=False)
    assert lenient.delete_offloaded(7, fs_ctx(7, storageBasePath="/somewhere/else"), ML_NAME)
    mapfile(tmp_path, ML_NAME, 8)
    # Pulsar's shipped hadoop.tmp.dir is the relative "pulsar": nothing to compare it with.
    assert storage.delete_offloaded(8, fs_ctx(8, storageBasePath="pulsar"), ML_NAME) is True
    mapfile(tmp_path, ML_NAME, 9)
    assert storage.delete_offloaded(9, fs_ctx(9, storageBasePath=str(tmp_path)), ML_NAME)


def test_fs_missing_base_is_an_error_not_already_deleted(tmp_path: Path) -> None:
    with pytest.raises(LedgerStorageError, match="not a directory"):
        FileSystemOffloadStorage(tmp_path / "unmounted").delete_offloaded(7, fs_ctx(7), ML_NAME)


def test_fs_finishes_a_deletion_a_crash_interrupted(tmp_path: Path) -> None:
    directory = mapfile(tmp_path, ML_NAME, 7)
    tombstone = directory.with_name(f".{directory.name}.deleting-0123")
    directory.rename(tombstone)
    assert FileSystemOffloadStorage(tmp_path).delete_offloaded(7, fs_ctx(7), ML_NAME) is False
    assert not tombstone.exists()


def test_fs_concurrent_deletes_report_exactly_one_deletion(tmp_path: Path) -> None:
    directory = mapfile(tmp_path, ML_NAME, 7)
    storage = FileSystemOffloadStorage(tmp_path)
    results = run_concurrently(lambda: storage.delete_offloaded(7, fs_ctx(7), ML_NAME))
    assert sorted(results, key=str) == [False, False, False, True]
    assert list(directory.parent.iterdir()) == []
