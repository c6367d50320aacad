"""Issue 24's scenario end to end, through the CLI, on a real ZooKeeper: a cursor ledger is
being created (in BookKeeper's layout, not yet recorded) while the managed ledger rolls
over and records a newer one; `ledger-janitor enqueue` names the cursor ledger, `ledger-janitor
run` handles it, and then the cursor records it. It must still exist, with the default age
rule and with one shorter than the ledger's age. The topic's metadata and the ledgers are
written by the test's own oracle; what exists is read raw with kazoo."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import zookeeper_backend
from harness.process import start_sidecar, stop_sidecar, wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker
from tests.reliability.oracle import GroundTruth
from tests.reliability.raw_ledgers import ZooKeeperLedgers


@pytest.mark.parametrize("min_age", [None, 0], ids=["default-age", "no-age-rule"])
def test_a_cursor_ledger_being_created_below_a_newer_data_ledger_is_kept(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    zk_client: KazooClient,
    chroot: str,
    namespace: NamespaceName,
    min_age: int | None,
) -> None:
    backend = zookeeper_backend(zookeeper.hosts, chroot)
    try:
        truth = GroundTruth(backend.metadata, backend.factory)
        topic = TopicName(namespace, "orders")
        seeded = truth.seed(topic, ledgers=1, cursors=("sub",))
        # The cursor is creating its next ledger: in BookKeeper, recorded nowhere yet.
        creating = truth.new_ledger(topic, LedgerComponent.MANAGED_CURSOR, "sub")
        url = f"zk:{zookeeper.hosts}{chroot}"
        # None: the product's default age rule (600 s).
        settings = {
            "sendDelaySecondsOfTwoPhaseDeletion": 1,
            "minLedgerAgeSecondsOfTwoPhaseDeletion": min_age,
        }
        overrides = [a for k, v in settings.items() if v is not None for a in ("--set", f"{k}={v}")]
        enqueued = subprocess.run(
            [sys.executable, "-m", "ledger_janitor", "enqueue", topic.full_name, str(creating),
             "--component", "MANAGED_CURSOR", "--metadata-store", url,
             "--broker-url", broker.service_url, *overrides],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert enqueued.returncode == 0, enqueued.stderr
        newer = truth.roll_over(topic)  # the managed ledger records a newer ledger meanwhile
        assert seeded.cursors["sub"] < creating < newer

        sidecar = start_sidecar(url, broker.service_url, **settings)
        handled: list[dict[str, object]] = []

        def handled_it() -> bool:
            assert sidecar.stderr is not None
            line = sidecar.stderr.readline()
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("ledger_id") == creating and entry.get("event") == "reconsumed":
                    handled.append(entry)
            return bool(handled)

        try:
            wait_until(handled_it, 60, f"the worker's ruling on ledger {creating}")
        finally:
            stop_sidecar(sidecar)
        reason = str(handled[0]["reason"])
        if min_age is None:
            assert "too young" in reason
        else:  # no age rule: only the cursor's own sequence keeps it
            assert reason.startswith("cursor 'sub' of ") and "may still be creating it" in reason
        truth.rotate_cursor(topic, "sub", creating)  # the cursor records it at last
        raw = ZooKeeperLedgers(zk_client)
        assert creating in raw.alive()
        assert truth.referenced() <= raw.alive()
    finally:
        backend.ledgers.close()
