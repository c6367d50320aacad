"""harness.pulsar_lite.skip_consumer_ids on the real embedded broker: the ids it uses up."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pulsar

from harness.pulsar_lite import skip_consumer_ids
from ledger_janitor.demo.embedded import EmbeddedBroker


def test_skipping_five_ids_uses_up_eight_not_twenty(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """pulsar-lite makes every topic partitioned (4 here): a subscribe takes 4 ids. It used to
    subscribe once per id asked for, burning 20 for 5."""
    lines: list[str] = []
    logger = logging.getLogger(f"pulsar-ids-{tmp_path.name}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    client = pulsar.Client(broker.service_url, logger=logger)
    try:
        skip_consumer_ids(client, 5)
        client.subscribe(f"persistent://public/ids/{tmp_path.name}-partition-1", "s").close()
    finally:
        client.close()
    text = "\n".join(lines)
    created = re.findall(r"\[([^,\]]+), [^,\]]+, (\d+)\] Created consumer", text)
    burnt = [int(i) for topic, i in created if "ledger-janitor-burn" in topic]
    after = [int(i) for topic, i in created if "ledger-janitor-burn" not in topic]
    assert sorted(burnt) == list(range(8))
    assert min(after) == 8
