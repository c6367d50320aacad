"""OFFLOAD_LEDGER messages handled by a real worker: S3 (moto server) and the filesystem."""

from __future__ import annotations

import uuid
from pathlib import Path

import boto3
import pytest

from consumers.handler import Outcome
from deletion.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.offload import data_key, index_key, java_uuid, offload_context
from deletion.topics import NamespaceName, TopicName
from ledger_janitor.seeding import TopicSeeder

from .harness.janitor import JanitorFactory, Recorder


def _offloaded(
    topic: TopicName, ledger_id: int, driver: str, **props: str
) -> PendingDeleteLedgerInfo:
    ledger_uuid = str(uuid.uuid4())
    context = offload_context(ledger_id, ledger_uuid, driver, props)
    return PendingDeleteLedgerInfo(
        topic, LedgerComponent.MANAGED_LEDGER, LedgerType.OFFLOAD_LEDGER, ledger_id, context
    )


def test_offloaded_ledger_in_s3_is_deleted_and_the_bookkeeper_copy_left_to_its_own_message(
    janitor: JanitorFactory,
    namespace: NamespaceName,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = f"offload-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "tiered"), ledgers=3)
    target = seeded.ledgers[0]
    info = _offloaded(seeded.topic, target, "aws-s3", bucket=bucket)
    offloaded_uuid = info.ledger_info.offloadContext  # type: ignore[union-attr]
    assert offloaded_uuid is not None
    ledger_uuid = java_uuid(offloaded_uuid.uidMsb, offloaded_uuid.uidLsb)
    kept = [data_key(seeded.ledgers[1], ledger_uuid), "unrelated-object"]
    for key in [data_key(target, ledger_uuid), index_key(target, ledger_uuid), *kept]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"block")
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
    listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    assert sorted(item["Key"] for item in listed) == sorted(kept)
    assert janitor.backend.exists(target)  # the BookKeeper ledger has its own LEDGER message


def test_offloaded_ledger_on_the_filesystem_and_an_unconfigured_driver(
    janitor: JanitorFactory, namespace: NamespaceName, tmp_path: Path
) -> None:
    base = tmp_path / "offload"
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "files"), ledgers=4)
    on_disk = _offloaded(seeded.topic, seeded.ledgers[0], "filesystem", storageBasePath=str(base))
    on_gcs = _offloaded(seeded.topic, seeded.ledgers[1], "google-cloud-storage", bucket="b")
    context = on_disk.ledger_info.offloadContext  # type: ignore[union-attr]
    ledger_dir = (
        base
        / seeded.topic.managed_ledger_name
        / f"{seeded.ledgers[0]}-{java_uuid(context.uidMsb, context.uidLsb)}"
    )
    ledger_dir.mkdir(parents=True)
    for part in ("data", "index"):
        (ledger_dir / part).write_bytes(b"block")
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
