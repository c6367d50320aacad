"""In-use look-ups: metadata fetches per topic per TTL window while a worker handles a
burst of pending deletions, against a real ZooKeeper and a real pulsar-lite broker.

    python -m bench.in_use_lookups [--json] [--quick] [--messages N] [--topics T]

N pending deletions (default 10,000) over T topics (default 100) are enqueued and committed,
then one worker (`Sidecar.worker`, inUseLedgersCacheTtlSeconds=600, parallelism 4) handles
them all within one TTL window. Every read the in-use check makes of the metadata store is
counted per topic, beside the reads the same messages would cost with no cache (one fetch
per message) measured by a second worker with a zero TTL over a sample of the messages.

Target: one fetch per topic per TTL window. `--json` ends with one JSON object.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench._common import (
    Services,
    console_for,
    enqueue_then_commit,
    finish,
    parser,
    quiet,
    remaining,
    render,
    seed,
    services,
    topics_over,
)
from deletion.domain.ports import MetadataStore, Node
from deletion.domain.topics import java_url_decode
from harness.janitor import Recorder
from ledger_janitor.sidecar.wiring import Sidecar, open_sidecar

TTL_SECONDS = 600


class CountingStore:
    """A MetadataStore that counts the in-use reads (managed ledgers, cursors, schemas)."""

    def __init__(self, real: MetadataStore) -> None:
        self._real = real
        self._lock = threading.Lock()
        self.fetches: Counter[str] = Counter()  # managed-ledger reads: one per fetch
        self.reads = 0

    def _count(self, path: str, fetch: bool) -> None:
        """Managed ledger, its cursors and the schema; a fetch starts with the managed ledger."""
        parts = path.split("/")
        in_use = (parts[1] == "managed-ledgers" and len(parts) >= 6) or parts[1] == "schemas"
        if in_use:
            with self._lock:
                self.reads += 1
                if fetch and parts[1] == "managed-ledgers" and len(parts) == 6:
                    self.fetches[f"{parts[2]}/{parts[3]}/{java_url_decode(parts[5])}"] += 1

    def get(self, path: str) -> Node | None:
        self._count(path, fetch=True)
        return self._real.get(path)

    def children(self, path: str) -> list[str]:
        self._count(path, fetch=False)
        return self._real.children(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def handle_all(sidecar: Sidecar, expected: int, ttl: int) -> tuple[float, dict[str, int], Any]:
    counting = CountingStore(sidecar.metadata)
    sidecar.metadata = counting
    sidecar.config = sidecar.config.with_overrides(in_use_ledgers_cache_ttl_seconds=ttl)
    recorder = Recorder()
    worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=1.0)
    started = time.perf_counter()
    worker.start()
    recorder.wait_for(lambda results: len(results) >= expected, timeout=900)
    elapsed = time.perf_counter() - started
    cache = worker._handler.in_use.counters  # the worker's own cache
    worker.stop()
    return elapsed, worker.stats.summary(), (counting, cache)


def run(messages: int, topics: int, sample: int, workdir: Path | None) -> dict[str, Any]:
    with services(workdir) as svc:
        cached = _phase(svc, "/bench-in-use", messages, topics, TTL_SECONDS)
        uncached = _phase(svc, "/bench-no-cache", sample, min(topics, sample), 0)
    fetches = cached["fetches_per_topic"]
    per_fetch = cached["reads"] / max(1, sum(fetches.values()))
    return {
        "bench": "in_use_lookups",
        "messages": cached["messages"],
        "topics": topics,
        "ttl_seconds": TTL_SECONDS,
        "seconds": cached["seconds"],
        "ttl_windows": 1 + int(cached["seconds"] // TTL_SECONDS),
        "fetches_total": sum(fetches.values()),
        "fetches_per_topic_max": max(fetches.values()),
        "fetches_per_topic_min": min(fetches.values()),
        "topics_fetched": len(fetches),
        "metadata_reads": cached["reads"],
        "cache_hits": cached["hits"],
        "cache_misses": cached["misses"],
        "uncached_messages": uncached["messages"],
        "uncached_fetches_per_message": sum(uncached["fetches_per_topic"].values())
        / uncached["messages"],
        "metadata_reads_without_cache": round(per_fetch * cached["messages"]),
        "target_met": max(fetches.values()) == 1 and len(fetches) == topics,
        "outcomes": cached["outcomes"],
        "correct": cached["correct"] and uncached["correct"],
    }


def _phase(svc: Services, chroot: str, messages: int, topics: int, ttl: int) -> dict[str, Any]:
    sidecar = open_sidecar(svc.config(chroot), client_log=svc.root / "client.log")
    try:
        client = sidecar.metadata.client  # type: ignore[attr-defined]
        tenant = chroot.strip("/").replace("-", "")
        names = topics_over(max(1, topics // 20), topics, tenant)
        seeded = seed(client, sidecar.metadata, names, messages // topics)
        released = {i for entry in seeded for i in entry.released}
        enqueue_then_commit(sidecar, seeded)
        store = sidecar.metadata
        elapsed, outcomes, (counting, cache) = handle_all(sidecar, len(released), ttl)
        left = remaining(store)
        referenced = set().union(*(entry.referenced() for entry in seeded))
        return {
            "messages": len(released),
            "seconds": elapsed,
            "fetches_per_topic": dict(counting.fetches),
            "reads": counting.reads,
            "hits": cache.hits,
            "misses": cache.misses,
            "outcomes": outcomes,
            "correct": not (left & released) and referenced <= left,
        }
    finally:
        sidecar.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser("in_use_lookups", __doc__)
    args.add_argument("--messages", type=int, help="pending deletions (default 10000)")
    args.add_argument("--topics", type=int, help="topics they belong to (default 100)")
    options = args.parse_args(argv)
    quiet()
    messages = options.messages or (400 if options.quick else 10_000)
    topics = options.topics or (20 if options.quick else 100)
    result = run(messages, topics, min(messages, 500), options.workdir)
    console = console_for(options.json)
    render(
        f"In-use look-ups: {result['messages']:,} messages over {topics} topics, "
        f"TTL {TTL_SECONDS}s, {result['seconds']:.1f}s ({result['ttl_windows']} window)",
        ["what", "value"],
        [
            ("metadata fetches per topic (max)", result["fetches_per_topic_max"]),
            ("metadata fetches per topic (min)", result["fetches_per_topic_min"]),
            ("topics fetched", result["topics_fetched"]),
            ("metadata reads (znodes) with the cache", result["metadata_reads"]),
            ("cache hits / misses", f"{result['cache_hits']:,} / {result['cache_misses']:,}"),
            (
                f"no cache (TTL 0, {result['uncached_messages']} messages): fetches a message",
                result["uncached_fetches_per_message"],
            ),
            (
                "metadata reads the same messages would cost with no cache",
                result["metadata_reads_without_cache"],
            ),
        ],
        console,
    )
    verdict = "met" if result["target_met"] else "NOT met"
    console.print(
        f"target: one fetch per topic per TTL window: {verdict}; outcomes {result['outcomes']}"
    )
    return finish(result, options.json)


if __name__ == "__main__":
    main()
