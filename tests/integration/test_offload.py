"""Offloaded-ledger deletion: Java UUID vectors, context decoding, S3 against a real moto server,
and the filesystem offloader's MapFile layout in real directories."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from core.errors import DecodeError, LedgerStorageError, TransientLedgerStorageError
from deletion.adapters.offload import (
    FileSystemOffloadStorage,
    IncompleteOffloadError,
    OffloadRouter,
    S3OffloadStorage,
    UnsupportedOffloadDriverError,
    data_key,
    decode_offload,
    java_uuid,
    java_uuid_bits,
    offload_context,
    offload_storage_for,
    parse_ledger_info,
    s3_client,
)
from deletion.adapters.offload.s3 import S3Client, storage_error
from deletion.domain.message import (
    LedgerComponent,
    LedgerType,
    PendingDeleteLedgerInfo,
    decode,
    encode,
)
from deletion.domain.topics import TopicName
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo
from harness.offload_objects import plant_mapfile, plant_s3
from ledger_janitor.embedded import free_port

ML_NAME = "public/default/persistent/my%20topic"
UID = "123e4567-e89b-12d3-a456-426614174000"
LedgerInfo = ManagedLedgerInfo.LedgerInfo


def ctx(ledger_id: int, uid: str = UID, driver: str = "aws-s3", **props: str) -> LedgerInfo:
    return parse_ledger_info(offload_context(ledger_id, uid, driver, props))


def run_concurrently(action: Callable[[], bool], threads: int = 4) -> list[bool | Exception]:
    barrier = threading.Barrier(threads)
    results: list[bool | Exception] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        try:
            outcome: bool | Exception = action()
        except Exception as exc:
            outcome = exc
        with lock:
            results.append(outcome)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return results


# --- Java UUIDs and the context ---------------------------------------------------------------

# Derived by hand: Java prints (msb, lsb) as the unsigned 128-bit value in 8-4-4-4-12 hex.
UUID_VECTORS = [
    (0x123E4567E89B12D3, 0xA456426614174000 - 2**64, UID),
    (0x0000000100000002, 0x0003000400000005, "00000001-0000-0002-0003-000400000005"),
    (-1, -1, "ffffffff-ffff-ffff-ffff-ffffffffffff"),
    (0, 1, "00000000-0000-0000-0000-000000000001"),
    (-(2**63), 2**63 - 1, "80000000-0000-0000-7fff-ffffffffffff"),
]


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


def _no_offload_context() -> LedgerInfo:
    return LedgerInfo(ledgerId=7)


def _no_uid() -> LedgerInfo:
    info = LedgerInfo(ledgerId=7)
    info.offloadContext.complete = True
    return info


def _streaming() -> LedgerInfo:
    info = ctx(7)
    info.offloadContext.offloadSegment.add(uidMsb=1, uidLsb=2, complete=True)
    return info


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


# --- S3, against a real moto server ------------------------------------------------------------


def fast_client(endpoint: str) -> S3Client:
    return s3_client(
        endpoint,
        "us-east-1",
        access_key_id="testing",
        secret_access_key="testing",
        connect_timeout=2.0,
        read_timeout=5.0,
        max_attempts=1,
    )


@pytest.fixture
def s3(moto_endpoint: str) -> S3Client:
    return fast_client(moto_endpoint)


@pytest.fixture
def bucket(s3: S3Client) -> str:
    name = f"offload-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)  # type: ignore[attr-defined]
    return name


def keys(s3: S3Client, bucket: str) -> set[str]:
    listed = s3.list_objects_v2(Bucket=bucket)  # type: ignore[attr-defined]
    return {item["Key"] for item in listed.get("Contents", [])}


def put(s3: S3Client, bucket: str, *names: str) -> None:
    for name in names:
        s3.put_object(Bucket=bucket, Key=name, Body=b"block")  # type: ignore[attr-defined]


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


# --- filesystem, in real directories -----------------------------------------------------------


def fs_ctx(ledger_id: int, uid: str = UID, **props: str) -> LedgerInfo:
    return ctx(ledger_id, uid, "filesystem", **props)


def mapfile(base: Path, ml_name: str, ledger_id: int, uid: str = UID) -> Path:
    """The directory Hadoop's MapFile.Writer leaves on a local (checksummed) filesystem."""
    return plant_mapfile(base, ml_name, ledger_id, uid)


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


# --- choosing the adapter ----------------------------------------------------------------------


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
