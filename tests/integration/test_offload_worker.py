"""OFFLOAD_LEDGER messages handled by a real worker: S3 (moto server) and the filesystem, with
objects planted as Pulsar's offloaders write them (harness/offload_objects.py)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from deletion.adapters.offload import java_uuid, offload_context
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory, Recorder
from harness.offload_objects import base_metadata, plant_mapfile, plant_s3
from ledger_janitor.demo.seeding import TopicSeeder

RIVAL = TopicName.parse("persistent://rival/secret/ledger").managed_ledger_name


def _offloaded(
    topic: TopicName, ledger_id: int, driver: str, **props: str
) -> PendingDeleteLedgerInfo:
    ledger_uuid = str(uuid.uuid4())
    context = offload_context(ledger_id, ledger_uuid, driver, props)
    return PendingDeleteLedgerInfo(
        topic, LedgerComponent.MANAGED_LEDGER, LedgerType.OFFLOAD_LEDGER, ledger_id, context
    )


def _uuid(info: PendingDeleteLedgerInfo) -> str:
    assert info.ledger_info is not None
    context = info.ledger_info.offloadContext
    return java_uuid(context.uidMsb, context.uidLsb)


def _s3(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = f"offload-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    return s3, bucket


def _keys(s3: Any, bucket: str) -> list[str]:
    return sorted(item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def test_offloaded_ledger_in_s3_is_deleted_and_the_bookkeeper_copy_left_to_its_own_message(
    janitor: JanitorFactory,
    namespace: NamespaceName,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s3, bucket = _s3(moto_endpoint, monkeypatch)
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "tiered"), ledgers=3)
    target = seeded.ledgers[0]
    info = _offloaded(seeded.topic, target, "aws-s3", bucket=bucket)
    name = seeded.topic.managed_ledger_name
    plant_s3(s3, bucket, target, _uuid(info), name)
    kept = plant_s3(s3, bucket, seeded.ledgers[1], _uuid(info), name, objects=["data"])
    s3.put_object(Bucket=bucket, Key="unrelated-object", Body=b"block")
    kept.add("unrelated-object")
    janitor.sidecar().phase_one.enqueue_then_commit(
        [info], lambda: seeder.release(seeded, [target])
    )
    recorder = Recorder()
    janitor.worker(
        recorder,
        s3_managed_ledger_offload_service_endpoint=moto_endpoint,
        s3_managed_ledger_offload_region="us-east-1",
    )

    recorder.wait_for(lambda rs: len(rs) == 1)
    assert recorder.results[0].outcome is Outcome.DELETED, recorder.results[0].reason
    assert _keys(s3, bucket) == sorted(kept)
    assert janitor.backend.exists(target)  # the BookKeeper ledger has its own LEDGER message


def test_offloaded_ledger_on_the_filesystem_and_an_unconfigured_driver(
    janitor: JanitorFactory, namespace: NamespaceName, tmp_path: Path
) -> None:
    base = tmp_path / "offload"
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "files"), ledgers=4)
    on_disk = _offloaded(seeded.topic, seeded.ledgers[0], "filesystem", storageBasePath=str(base))
    on_gcs = _offloaded(seeded.topic, seeded.ledgers[1], "google-cloud-storage", bucket="b")
    ledger_dir = plant_mapfile(
        base, seeded.topic.managed_ledger_name, seeded.ledgers[0], _uuid(on_disk)
    )
    janitor.sidecar().phase_one.enqueue_then_commit(
        [on_disk, on_gcs], lambda: seeder.release(seeded, seeded.ledgers[:2])
    )
    recorder = Recorder()
    janitor.worker(recorder, file_system_offload_storage_base_path=str(base))

    recorder.wait_for(lambda rs: len(rs) == 2)
    by_ledger = {r.info.ledger_id: r for r in recorder.results if r.info}
    assert by_ledger[on_disk.ledger_id].outcome is Outcome.DELETED
    assert not ledger_dir.exists() and ledger_dir.parent.exists()
    assert by_ledger[on_gcs.ledger_id].outcome is Outcome.ARCHIVED
    assert "not supported" in by_ledger[on_gcs.ledger_id].reason


def test_offloaded_objects_naming_another_topic_are_archived_and_kept(
    janitor: JanitorFactory,
    namespace: NamespaceName,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The BookKeeper copies are gone, as after offload: only the objects can say whose they
    are. A message of this topic naming another topic's offloaded objects must not delete them."""
    s3, bucket = _s3(moto_endpoint, monkeypatch)
    base = tmp_path / "offload"
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "victim-free"), ledgers=4)
    owned, foreign_s3, foreign_fs = seeded.ledgers[:3]
    name = seeded.topic.managed_ledger_name
    messages = {
        owned: _offloaded(seeded.topic, owned, "aws-s3", bucket=bucket),
        foreign_s3: _offloaded(seeded.topic, foreign_s3, "aws-s3", bucket=bucket),
        foreign_fs: _offloaded(seeded.topic, foreign_fs, "filesystem"),
    }
    plant_s3(s3, bucket, owned, _uuid(messages[owned]), name)
    rival_objects = plant_s3(s3, bucket, foreign_s3, _uuid(messages[foreign_s3]), RIVAL)
    rival_dir = plant_mapfile(
        base, name, foreign_fs, _uuid(messages[foreign_fs]), custom=base_metadata(RIVAL)
    )
    for ledger_id in messages:
        janitor.backend.ledgers.delete_ledger(ledger_id)
    janitor.sidecar().phase_one.enqueue_then_commit(
        list(messages.values()), lambda: seeder.release(seeded, list(messages))
    )
    recorder = Recorder()
    janitor.worker(
        recorder,
        s3_managed_ledger_offload_service_endpoint=moto_endpoint,
        s3_managed_ledger_offload_region="us-east-1",
        file_system_offload_storage_base_path=str(base),
    )

    recorder.wait_for(lambda rs: len(rs) == 3)
    by_ledger = {r.info.ledger_id: r for r in recorder.results if r.info}
    assert by_ledger[owned].outcome is Outcome.DELETED, by_ledger[owned].reason
    for ledger_id in (foreign_s3, foreign_fs):
        assert by_ledger[ledger_id].outcome is Outcome.ARCHIVED, by_ledger[ledger_id].reason
        assert RIVAL in by_ledger[ledger_id].reason
    assert _keys(s3, bucket) == sorted(rival_objects)
    assert sorted(p.name for p in rival_dir.iterdir()) == [
        ".data.crc",
        ".index.crc",
        "data",
        "index",
    ]
