"""harness.pulsar_lite.skip_consumer_ids on the real embedded broker: the ids it uses up."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from harness.process import ROOT
from ledger_janitor.demo.embedded import EmbeddedBroker

# In a process of its own: the Pulsar C++ client takes its logger once per process, so a
# client made earlier in the test session (with the sidecar's log routing) would keep it.
PROGRAM = """
import logging, os, sys
import pulsar
from harness.pulsar_lite import skip_consumer_ids

url, topic = sys.argv[1:]
logger = logging.getLogger("pulsar-ids")
logger.setLevel(logging.INFO)
logger.propagate = False
handler = logging.StreamHandler(sys.stdout)
logger.addHandler(handler)
client = pulsar.Client(url, logger=logger)
try:
    skip_consumer_ids(client, 5)
    client.subscribe(topic, "s").close()
finally:
    client.close()
sys.stdout.flush()
os._exit(0)  # no interpreter shutdown under the C++ client's logging threads (it can abort)
"""


def test_skipping_five_ids_uses_up_eight_not_twenty(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """pulsar-lite makes every topic partitioned (4 here): a subscribe takes 4 ids. It used to
    subscribe once per id asked for, burning 20 for 5."""
    topic = f"persistent://public/ids/{tmp_path.name}-partition-1"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, broker.service_url, topic],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    created = re.findall(r"\[([^,\]]+), [^,\]]+, (\d+)\] Created consumer", done.stdout)
    burnt = [int(i) for name, i in created if "ledger-janitor-burn" in name]
    after = [int(i) for name, i in created if "ledger-janitor-burn" not in name]
    assert sorted(burnt) == list(range(8))
    assert min(after) == 8
