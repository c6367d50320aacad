"""`ledger-janitor` exactly as installed, with two test-only additions:

    python -m tests.reliability.worker_main BURN run [run's options...]

1. pulsar-lite rejects a subscription whose consumer id another connection already uses on
   the same subscription ("Consumer 0 already exists"), and every client numbers its
   consumers from 0. So before the worker subscribes, this process opens and closes BURN
   throwaway consumers on a private topic: its real consumer ids then start at BURN, disjoint
   from a first worker's. A real Pulsar broker keys consumers by connection and needs none
   of this.
2. When `run` closes its sidecar, one JSON line on stdout reports what a leak would show:
   the worker's counts, the producers still open in the pool, the subscriptions it had,
   the live threads and the peak RSS.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pulsar

from harness.pulsar_lite import skip_consumer_ids
from ledger_janitor import cli
from ledger_janitor.sidecar import wiring
from transport import client as broker


def _burning(count: int) -> Any:
    real_connect = broker.connect

    def connect(config: Any, log_file: Path | None = None) -> pulsar.Client:
        client = real_connect(config, log_file)
        skip_consumer_ids(client, count)
        return client

    return connect


def _peak_rss_kb() -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) if match else -1


def _reporting(real_worker: Any) -> Any:
    def worker(self: wiring.Sidecar, *args: Any, **kwargs: Any) -> Any:
        made = real_worker(self, *args, **kwargs)
        seen: dict[str, int] = {}
        real_stop, real_close = made.stop, self.close

        def stop(timeout: float = 30.0) -> None:
            seen["subscribed"] = len(made.subscribed)
            real_stop(timeout)

        def close() -> None:
            report = {
                "stats": made.stats.summary(),
                "subscribed": seen.get("subscribed"),
                "producers_open": len(self.pool),
                "threads": threading.active_count(),
                "peak_rss_kb": _peak_rss_kb(),
            }
            print(json.dumps(report), flush=True)
            real_close()

        made.stop = stop
        self.close = close  # type: ignore[method-assign]
        return made

    return worker


def main() -> None:
    burn, argv = int(sys.argv[1]), sys.argv[2:]
    broker.connect = _burning(burn)
    wiring.Sidecar.worker = _reporting(wiring.Sidecar.worker)  # type: ignore[method-assign]
    cli.main(argv)


if __name__ == "__main__":
    main()
