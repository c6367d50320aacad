"""The live compacted ledger is never "unreferenced": on a real broker just after a
compaction, the topic's `__compaction` cursor records it in the cursor's own ledger, not yet
in its znode. The audit asks the broker (webServiceUrl); without one it says "unknown".

Ground truth is the broker's own `internalStats` (`compactedLedger.ledgerId`), read by the
test, and the compacted view the broker still serves after the audit."""

from __future__ import annotations

from pathlib import Path

from deletion.domain.topics import NamespaceName, TopicName
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar


def _statuses(report: Path, ledger_id: int) -> list[str]:
    """The status the audit's report gives the ledger, if it lists it."""
    found = rig.rows(
        f"SELECT status FROM '{report}/unreferenced/**/*.parquet' WHERE ledger_id = {ledger_id}"
    )
    return [status for (status,) in found]


def test_the_live_compacted_ledger_is_referenced_or_unknown_never_unreferenced(
    real_pulsar: RealPulsar,
    broker_admin: BrokerAdmin,
    real_namespace: NamespaceName,
    tmp_path: Path,
    client_log: Path,
) -> None:
    topic = TopicName(real_namespace, "prices")
    client = rig.client(real_pulsar, client_log)
    try:
        client.subscribe(topic.full_name, "keep").close()
        producer = client.create_producer(topic.full_name, batching_enabled=False)
        for index in range(40):
            producer.send(f"v{index}".encode(), partition_key=f"k{index % 5}")
        producer.close()
        path = broker_admin.topic_path(topic)
        broker_admin.put(f"{path}/compaction")
        rig.wait_until(
            lambda: broker_admin.get(f"{path}/compaction")["status"] == "SUCCESS",
            60, "the compaction",
        )  # fmt: skip
        stats = broker_admin.get(f"{path}/internalStats")
        compacted = int(stats["compactedLedger"]["ledgerId"])
        assert compacted >= 0, stats["compactedLedger"]

        scope = ("--metadata-store", real_pulsar.metadata_url, "--min-age", "0s",
                 "--set", f"deletionNamespaces={real_namespace}")  # fmt: skip
        # No broker to ask: the metadata cannot tell, so the ledger is unknown.
        blind = tmp_path / "blind"
        figures = rig.audit(*scope, "--output", str(blind))
        assert _statuses(blind, compacted) == ["unknown"], "the znode held it: nothing to prove"
        assert figures["unknown"] >= 1, figures
        # The broker asked: it reads that ledger, so the audit counts it referenced.
        asked = tmp_path / "asked"
        rig.audit(*scope, "--output", str(asked), "--set", f"webServiceUrl={real_pulsar.web_url}")
        assert _statuses(asked, compacted) == []
        # ... and the broker still serves the compacted view.
        latest = rig.compacted_view(client, topic)
        assert latest == {f"k{i}": f"v{35 + i}".encode() for i in range(5)}
    finally:
        client.close()
