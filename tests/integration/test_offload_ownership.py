"""Offloaded objects must prove they are the message's topic's before they are deleted: S3
against a real moto server, MapFiles in real directories. Each refusal leaves every object."""

from __future__ import annotations

import io
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import (
    DecodeError,
    LedgerStorageError,
    OffloadOwnershipError,
    TransientLedgerStorageError,
)
from deletion.adapters.offload import (
    FileSystemOffloadStorage,
    S3OffloadStorage,
    index_key,
    offload_context,
    parse_ledger_info,
    s3_client,
)
from deletion.adapters.offload.ownership import OwnershipProof
from deletion.adapters.offload.s3 import INDEX_PREFIX_BYTES, S3Client
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent
from deletion.domain.topics import TopicName
from deletion.wire import index_block, mapfile
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo
from harness.offload_objects import (
    base_metadata,
    index_object,
    ledger_metadata,
    offloaded_mapfile,
    plant_mapfile,
    plant_s3,
    user_metadata,
)
from harness.offload_objects import mapfile as fixture_mapfile

TOPIC = TopicName.parse("persistent://acme/orders/my topic")
ML_NAME = TOPIC.managed_ledger_name
OTHER = TopicName.parse("persistent://rival/secret/ledger").managed_ledger_name
UID = str(uuid.uuid4())


def ctx(ledger_id: int, driver: str, **props: str) -> ManagedLedgerInfo.LedgerInfo:
    return parse_ledger_info(offload_context(ledger_id, UID, driver, props))


def test_the_rule_is_the_one_for_bookkeeper_ledgers() -> None:
    assert ML_NAME == "acme/orders/persistent/my+topic"  # Java's URLEncoder
    owned = pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_LEDGER)
    assert base_metadata(ML_NAME) == owned
    proof = OwnershipProof(7, ML_NAME)
    proof.ledger_metadata("here", owned)
    proof.require()
    cursor = pulsar_custom_metadata(TOPIC, LedgerComponent.MANAGED_CURSOR)
    refused = OwnershipProof(7, ML_NAME)
    refused.ledger_metadata("here", cursor)
    with pytest.raises(OffloadOwnershipError, match="not that of a managed ledger's data ledger"):
        refused.require()


def test_ownership_error_is_a_storage_refusal_not_a_transient_one() -> None:
    assert issubclass(OffloadOwnershipError, LedgerStorageError)


# --- S3 ------------------------------------------------------------------------------------------


@pytest.fixture
def s3(moto_endpoint: str) -> S3Client:
    return s3_client(
        moto_endpoint,
        "us-east-1",
        access_key_id="testing",
        secret_access_key="testing",
        max_attempts=1,
    )


@pytest.fixture
def bucket(s3: S3Client) -> str:
    name = f"owned-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)  # type: ignore[attr-defined]
    return name


def keys(s3: S3Client, bucket: str) -> set[str]:
    listed = s3.list_objects_v2(Bucket=bucket)  # type: ignore[attr-defined]
    return {item["Key"] for item in listed.get("Contents", [])}


def delete_s3(s3: S3Client, bucket: str) -> bool:
    return S3OffloadStorage(s3).delete_offloaded(7, ctx(7, "aws-s3", bucket=bucket), ML_NAME)


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param({}, id="pulsar-2.11+: user metadata and index"),
        pytest.param({"user_metadata_name": None}, id="before-2.11: the index alone"),
        pytest.param({"objects": ["data"]}, id="data object alone, user metadata"),
    ],
)
def test_s3_owned_objects_are_deleted(s3: S3Client, bucket: str, plant: dict[str, object]) -> None:
    plant_s3(s3, bucket, 7, UID, ML_NAME, **plant)  # type: ignore[arg-type]
    assert delete_s3(s3, bucket) is True
    assert keys(s3, bucket) == set()


@pytest.mark.parametrize(
    ("plant", "reason"),
    [
        pytest.param(
            {"user_metadata_name": OTHER, "custom": base_metadata(OTHER)}, OTHER, id="all"
        ),
        pytest.param({"user_metadata_name": OTHER}, OTHER, id="user-metadata"),
        pytest.param({"custom": base_metadata(OTHER)}, OTHER, id="index-metadata"),
        pytest.param(
            {"user_metadata_name": None, "custom": base_metadata(OTHER)}, OTHER, id="pre-2.11"
        ),
        pytest.param(
            {"user_metadata_name": OTHER, "objects": ["data"]}, OTHER, id="data-object-only"
        ),
    ],
)
def test_s3_another_topics_objects_are_refused_and_kept(
    s3: S3Client, bucket: str, plant: dict[str, object], reason: str
) -> None:
    planted = plant_s3(s3, bucket, 7, UID, ML_NAME, **plant)  # type: ignore[arg-type]
    with pytest.raises(
        OffloadOwnershipError, match=f"does not belong to {re.escape(ML_NAME)}.*{reason}"
    ):
        delete_s3(s3, bucket)
    assert keys(s3, bucket) == planted


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param({"user_metadata_name": None, "objects": ["data"]}, id="pre-2.11 data only"),
        pytest.param({"user_metadata_name": None, "custom": {}}, id="ledger without custom"),
        pytest.param(
            {"user_metadata_name": None, "custom": {"application": b"pulsar"}}, id="no ml name"
        ),
    ],
)
def test_s3_objects_naming_no_topic_cannot_prove_ownership(
    s3: S3Client, bucket: str, plant: dict[str, object]
) -> None:
    planted = plant_s3(s3, bucket, 7, UID, ML_NAME, **plant)  # type: ignore[arg-type]
    with pytest.raises(OffloadOwnershipError, match="cannot prove"):
        delete_s3(s3, bucket)
    assert keys(s3, bucket) == planted


@pytest.mark.parametrize(
    "body",
    [b"", b"not an index block", index_object(b"\xff" * 10), index_object(b"")[:20]],
    ids=["empty", "garbage", "bad-metadata", "truncated"],
)
def test_s3_unreadable_index_proves_nothing(s3: S3Client, bucket: str, body: bytes) -> None:
    key = index_key(7, UID)
    s3.put_object(  # type: ignore[attr-defined]
        Bucket=bucket, Key=key, Body=body, Metadata=user_metadata(None, "index")
    )
    with pytest.raises(OffloadOwnershipError, match=r"cannot prove.*unreadable"):
        delete_s3(s3, bucket)
    assert keys(s3, bucket) == {key}


def test_s3_metadata_beyond_the_first_read_is_fetched(s3: S3Client, bucket: str) -> None:
    custom = dict(base_metadata(ML_NAME), padding=b"p" * (INDEX_PREFIX_BYTES + 5000))
    plant_s3(s3, bucket, 7, UID, ML_NAME, user_metadata_name=None, custom=custom)
    assert delete_s3(s3, bucket) is True
    assert keys(s3, bucket) == set()


class DeletesUnderfoot:
    """A real client, but another worker deletes the objects just before the index is read."""

    def __init__(self, client: S3Client, doomed: set[str]) -> None:
        self._client, self._doomed = client, doomed

    def head_object(self, **kwargs: Any) -> Any:
        return self._client.head_object(**kwargs)

    def get_object(self, **kwargs: Any) -> Any:
        for key in self._doomed:
            self._client.delete_object(Bucket=kwargs["Bucket"], Key=key)
        return self._client.get_object(**kwargs)

    def delete_object(self, **kwargs: Any) -> Any:
        return self._client.delete_object(**kwargs)


def test_s3_index_deleted_while_read_is_transient_then_gone(s3: S3Client, bucket: str) -> None:
    planted = plant_s3(s3, bucket, 7, UID, ML_NAME, user_metadata_name=None)
    storage = S3OffloadStorage(DeletesUnderfoot(s3, planted))
    context = ctx(7, "aws-s3", bucket=bucket)
    with pytest.raises(TransientLedgerStorageError, match="vanished"):
        storage.delete_offloaded(7, context, ML_NAME)
    assert storage.delete_offloaded(7, context, ML_NAME) is False


def test_s3_user_metadata_name_is_compared_case_insensitively() -> None:
    for key in ("ManagedLedgerName", "managedledgername", "MANAGEDLEDGERNAME"):
        proof = OwnershipProof(7, ML_NAME)
        proof.user_metadata("o", {key: ML_NAME})
        proof.require()


# --- filesystem ----------------------------------------------------------------------------------


def delete_fs(base: Path) -> bool:
    return FileSystemOffloadStorage(base).delete_offloaded(7, ctx(7, "filesystem"), ML_NAME)


def test_fs_owned_mapfile_is_deleted(tmp_path: Path) -> None:
    directory = plant_mapfile(tmp_path, ML_NAME, 7, UID)
    assert delete_fs(tmp_path) is True
    assert not directory.exists()


def _files_with(**changes: bytes | None) -> dict[str, bytes]:
    files = offloaded_mapfile(ledger_metadata(base_metadata(ML_NAME)))
    for name, content in changes.items():
        if content is None:
            del files[name]
        else:
            files[name] = content
    return files


def _first_key_not_metadata() -> dict[str, bytes]:
    return fixture_mapfile([(0, b"entry-0"), (1, b"entry-1")])


@pytest.mark.parametrize(
    ("plant", "match"),
    [
        (lambda base: plant_mapfile(base, ML_NAME, 7, UID, custom=base_metadata(OTHER)), OTHER),
        (lambda base: plant_mapfile(base, ML_NAME, 7, UID, custom={}), "cannot prove"),
        (lambda base: plant_mapfile(base, ML_NAME, 7, UID, files=_files_with(data=None)), "no"),
        (lambda base: plant_mapfile(base, ML_NAME, 7, UID, files=_files_with(data=b"SEQ")), "un"),
        (lambda base: plant_mapfile(base, ML_NAME, 7, UID, files=_first_key_not_metadata()), "-1"),
    ],
    ids=["another-topic", "no-custom-metadata", "no-data-file", "truncated", "no-metadata-key"],
)
def test_fs_mapfile_that_does_not_prove_ownership_is_kept(
    tmp_path: Path, plant: Callable[[Path], Path], match: str
) -> None:
    directory = plant(tmp_path)
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    with pytest.raises(OffloadOwnershipError, match=match):
        delete_fs(tmp_path)
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


# --- hostile bytes -------------------------------------------------------------------------------

VALID_INDEX = index_object(ledger_metadata(base_metadata(ML_NAME)))
VALID_DATA = offloaded_mapfile(ledger_metadata(base_metadata(ML_NAME)))["data"]


@st.composite
def mutated(draw: st.DrawFn, valid: bytes) -> bytes:
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    return bytes(data[: draw(st.integers(0, len(data)))])


def _decodes_or_refuses(decode: Callable[[bytes], object], data: bytes) -> None:
    """Hostile bytes yield a complete LedgerMetadataFormat or a DecodeError, nothing else."""
    try:
        decoded = decode(data)
    except DecodeError:
        return
    assert isinstance(decoded, LedgerMetadataFormat) and decoded.IsInitialized()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), mutated(VALID_DATA)))
def test_mapfile_reader_refuses_hostile_bytes_with_decode_errors(data: bytes) -> None:
    _decodes_or_refuses(lambda raw: mapfile.ledger_metadata(io.BytesIO(raw)), data)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), mutated(VALID_INDEX)))
def test_index_reader_refuses_hostile_bytes_with_decode_errors(data: bytes) -> None:
    _decodes_or_refuses(index_block.ledger_metadata, data)
