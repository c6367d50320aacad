"""`cursor inspect` on a real subscription: the znode the broker wrote, its cursor ledger's
BookKeeper metadata as the broker's client wrote it, and one line on why the state in the
ledger is not read here (its entries are on the bookie)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pulsar

from deletion.domain.topics import NamespaceName, TopicName
from harness.process import run_cli
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar

ROOT = Path(__file__).resolve().parents[2]


def _inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("cursor", "inspect", *args)


def test_inspect_a_real_subscriptions_cursor(
    real_pulsar: RealPulsar,
    real_namespace: NamespaceName,
    broker_admin: BrokerAdmin,
    client_log: Path,
) -> None:
    topic = TopicName(real_namespace, "inspected")
    client = rig.client(real_pulsar, client_log)
    try:
        rig.produce(client, topic, 20)
        consumer = client.subscribe(
            topic.full_name,
            "audit-sub",
            consumer_type=pulsar.ConsumerType.Shared,
            initial_position=pulsar.InitialPosition.Earliest,
        )
        for index, message in enumerate(rig.receive_all(consumer, 20)):
            if index % 2 == 0 and index != 0:  # holes: individually deleted ranges
                consumer.acknowledge(message)

        def cursor_ledger() -> int:
            stats = broker_admin.internal_stats(topic)["cursors"]["audit-sub"]
            return int(stats["cursorLedger"])

        rig.wait_until(lambda: cursor_ledger() >= 0, 60, "the cursor's ledger")
        ledger_id = cursor_ledger()
        url = real_pulsar.metadata_url
        ran = _inspect(topic.full_name, "audit-sub", "--metadata-store", url, "--json")
        shown = _inspect(topic.full_name, "audit-sub", "--metadata-store", url)
        consumer.close()
    finally:
        client.close()
    # Today: {"ledgerId": ..., "readable": false} and nothing of the ledger.
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    report = json.loads(ran.stdout)
    assert report["znode"]["cursorsLedgerId"] == ledger_id
    ledger = report["ledger"]
    meta = ledger["metadata"]
    assert meta["state"] in ("OPEN", "CLOSED") and meta["ensembleSize"] >= 1
    assert meta["ensembles"][0]["bookies"] and meta["digestType"] is not None
    assert meta["customMetadata"]["pulsar/cursor"] == "audit-sub"
    assert meta["customMetadata"]["pulsar/managed-ledger"] == topic.managed_ledger_name
    assert ledger["readable"] is False and "stats-internal" in ledger["why"]
    assert shown.returncode == 0 and f"ledger {ledger_id}:" in shown.stdout
    assert "  pulsar/cursor: audit-sub" in shown.stdout
    assert report["state"] is None and report["cap"]["atCap"] is None
