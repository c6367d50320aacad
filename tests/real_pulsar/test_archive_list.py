"""`archive list` on a real Apache Pulsar (issue 31): the broker names the archive's last
message (GetLastMessageId), so the listing ends when that message arrives instead of
`--wait` seconds after the last one. The archive is what the project's set-up makes on a
stock broker: a topic that is not partitioned, with the archive's subscription."""

from __future__ import annotations

import json
import time
from pathlib import Path

from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.topics import NamespaceName, TopicName
from harness.process import run_cli
from ledger_janitor.demo.seeding import pending
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar

# Far longer than the listing needs: it must end at the last message, not wait this out.
WAIT_SECONDS = 60.0


def test_the_listing_ends_at_the_archives_last_message(
    real_pulsar: RealPulsar, real_namespace: NamespaceName, client_log: Path
) -> None:
    side = rig.sidecar(real_pulsar, client_log)
    try:
        side.phase_one.prepared([real_namespace])  # the archive's subscription, as `run` makes
        topic = TopicName(real_namespace, "orders")
        for ledger_id, reason in ((11, "gave up: timeout"), (12, "x"), (11, "still referenced")):
            properties = {props.ARCHIVE_REASON: reason, props.RECONSUME_TIMES: "11"}
            side.pool.send(
                real_namespace.archive_topic, message.encode(pending(topic, ledger_id)), properties
            ).result(30)
    finally:
        side.close()
    args = ("archive", "list", "-n", str(real_namespace), "--wait", str(WAIT_SECONDS),
            "--metadata-store", real_pulsar.metadata_url,
            "--broker-url", real_pulsar.service_url)  # fmt: skip

    began = time.monotonic()
    listed = run_cli(*args, "--json", timeout=3 * WAIT_SECONDS)
    took = time.monotonic() - began

    assert listed.returncode == 0, listed.stderr
    rows = {row["ledger_id"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {11, 12}
    assert rows[11]["archivings"] == 2 and rows[11]["reason"] == "still referenced"
    # Waiting --wait out would take 60 s and more; ending at the last message, the start-up
    # alone (seconds; 9 s at a load average of 21).
    assert took < WAIT_SECONDS / 2, took
