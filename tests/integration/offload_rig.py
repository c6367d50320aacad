"""Offload contexts and stores shared by the offload tests."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from deletion.adapters.offload import (
    offload_context,
    parse_ledger_info,
    s3_client,
)
from deletion.adapters.offload.s3 import S3Client
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo
from harness.offload_objects import plant_mapfile

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


# Derived by hand: Java prints (msb, lsb) as the unsigned 128-bit value in 8-4-4-4-12 hex.
UUID_VECTORS = [
    (0x123E4567E89B12D3, 0xA456426614174000 - 2**64, UID),
    (0x0000000100000002, 0x0003000400000005, "00000001-0000-0002-0003-000400000005"),
    (-1, -1, "ffffffff-ffff-ffff-ffff-ffffffffffff"),
    (0, 1, "00000000-0000-0000-0000-000000000001"),
    (-(2**63), 2**63 - 1, "80000000-0000-0000-7fff-ffffffffffff"),
]


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


def fs_ctx(ledger_id: int, uid: str = UID, **props: str) -> LedgerInfo:
    return ctx(ledger_id, uid, "filesystem", **props)


def mapfile(base: Path, ml_name: str, ledger_id: int, uid: str = UID) -> Path:
    """The directory Hadoop's MapFile.Writer leaves on a local (checksummed) filesystem."""
    return plant_mapfile(base, ml_name, ledger_id, uid)
