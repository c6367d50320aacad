"""Tiered storage on the real broker: real offloads by the filesystem offloader (its NAR from
Maven Central), their copies audited and deleted as orphans only when they are. A retried
offload's leftover is what the offloader itself wrote under another UUID (the real MapFile,
copied): the audit finds it and the worker deletes it; every copy the managed ledger names is
kept, and the subscription still reads every message back, the offloaded ones from the
offloader."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Recorder
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar


def _copies(root: Path, topic: TopicName) -> dict[str, Path]:
    """`<ledgerId>-<uuid>` MapFile directories the offloader wrote for the topic."""
    base = root / topic.namespace.tenant / topic.namespace.namespace / "persistent"
    folder = base / topic.managed_ledger_name.rsplit("/", 1)[1]
    return {path.name: path for path in folder.iterdir()} if folder.exists() else {}


def test_offloaded_copies_are_kept_and_a_retried_offloads_leftover_is_deleted(
    real_pulsar: RealPulsar, broker_admin: BrokerAdmin, real_namespace: NamespaceName,
    tmp_path: Path, client_log: Path,
) -> None:  # fmt: skip
    standalone = real_pulsar.ours()  # the offload directory is on this machine
    client = rig.client(real_pulsar, client_log)
    topic = TopicName(real_namespace, "tiered")
    try:
        sent = rig.produce(client, topic, 35)
        broker_admin.offload(topic)
        stats = broker_admin.internal_stats(topic)
        offloaded = [ledger["ledgerId"] for ledger in stats["ledgers"] if ledger["offloaded"]]
        assert len(offloaded) == 3, stats["ledgers"]
        copies = _copies(standalone.offload_dir, topic)
        assert {name.split("-", 1)[0] for name in copies} == {str(i) for i in offloaded}
        # What a failed, then retried, offload of the first ledger leaves: the same objects
        # under the UUID of the attempt the managed ledger no longer names.
        (first_copy,) = [p for n, p in copies.items() if n.startswith(f"{offloaded[0]}-")]
        leftover = first_copy.with_name(f"{offloaded[0]}-{uuid.uuid4()}")
        shutil.copytree(first_copy, leftover)

        report = tmp_path / "report"
        figures = rig.audit(
                "--metadata-store", real_pulsar.metadata_url,
                "--broker-url", real_pulsar.service_url, "--min-age", "0s",
                "--output", str(report), "--enqueue",
                "--set", f"fileSystemOffloadStorageBasePath={standalone.offload_dir}",
                "--set", "sendDelaySecondsOfTwoPhaseDeletion=1",
                "--set", f"deletionNamespaces={real_namespace}")  # fmt: skip
        print("audit:", json.dumps(figures))
        # The cluster's other namespaces are audited too: judge this one's rows (the report
        # lists the copies nothing references). Every copy the managed ledger names is
        # referenced; the leftover alone is an orphan, and enqueued.
        found = rig.rows(
            f"SELECT ledger_id, uuid, status FROM '{report}/offloaded/**/*.parquet'"
            f" WHERE namespace = '{real_namespace}'"
        )
        assert [(f"{ledger}-{uuid_}", status) for ledger, uuid_, status in found] == [
            (leftover.name, "orphan")
        ]
        assert figures["offloaded_copies"] >= 4
        assert figures["offload_enqueued"] >= 1

        sidecar = rig.sidecar(
            real_pulsar, client_log, deletion_namespaces=(str(real_namespace),),
            managed_ledger_offload_driver="filesystem",
            file_system_offload_storage_base_path=str(standalone.offload_dir),
            min_ledger_age_seconds_of_two_phase_deletion=0,
        )  # fmt: skip
        recorder = Recorder()
        worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.5)
        worker.start()
        try:
            rig.wait_until(lambda: not leftover.exists(), 60, "the leftover copy deleted")
        finally:
            worker.stop()
            sidecar.close()
        assert set(_copies(standalone.offload_dir, topic)) == set(copies)  # every named copy
        consumer = client.subscribe(topic.full_name, "keep")
        received = rig.receive_all(consumer, len(sent), timeout=60)
        assert [m.data() for m in received] == sent
        consumer.close()
    finally:
        client.close()
