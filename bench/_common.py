"""What the phase-two benches (and the reliability tests) share: private services started
the way the test suite starts them, fast seeding of Pulsar's layout in ZooKeeper, phase one
for a whole batch, and the table-or-JSON output every bench prints."""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kazoo.client import KazooClient
from rich.console import Console
from rich.table import Table

from config import ServiceConfiguration
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.domain.decision import pulsar_custom_metadata
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.ports import MetadataStore
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire import bookkeeper_metadata as bk
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat
from harness.janitor import make_chroot
from harness.zookeeper import ZooKeeperServer
from ledger_janitor import logs
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.sidecar.wiring import Sidecar

T = TypeVar("T")
# Outstanding asynchronous creates while seeding: enough to pipeline, few enough to be polite.
WINDOW = 2000


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def quiet() -> None:
    """Warnings only, and not kazoo's reconnect chatter while a server starts."""
    logs.configure(logging.WARNING)
    logging.getLogger("kazoo").setLevel(logging.ERROR)


@dataclass
class Services:
    """A private ZooKeeper server and pulsar-lite broker, as tests/conftest.py starts them."""

    root: Path
    zookeeper: ZooKeeperServer
    broker: EmbeddedBroker

    def config(self, chroot: str, **overrides: Any) -> ServiceConfiguration:
        """A sidecar's configuration on `chroot`, made now (laid out as a cluster's: nothing
        in the product makes a chroot) if it is not there yet."""
        make_chroot(self.zookeeper.hosts, chroot)
        settings: dict[str, Any] = {
            "broker_service_url": self.broker.service_url,
            "metadata_store_url": f"zk:{self.zookeeper.hosts}{chroot}",
            "send_delay_seconds_of_two_phase_deletion": 0,
            "clock_skew_allowance_seconds_of_two_phase_deletion": 0,  # one machine, one clock
            "min_ledger_age_seconds_of_two_phase_deletion": 0,  # every ledger is just made
            "reconsume_later_seconds_of_two_phase_deletion": 1,
            "operation_timeout_seconds": 30,
            "metrics_port": 0,
        }
        settings.update(overrides)
        return ServiceConfiguration().with_overrides(**settings)

    def kazoo(self, chroot: str = "") -> KazooClient:
        client = KazooClient(hosts=self.zookeeper.hosts + chroot, timeout=30)
        client.start(timeout=30)
        return client


@contextmanager
def services(workdir: Path | None = None) -> Iterator[Services]:
    root = workdir or Path(tempfile.mkdtemp(prefix="ledger-janitor-bench-"))
    zookeeper = ZooKeeperServer(root / "zookeeper").start()
    try:
        with EmbeddedBroker(root / "broker", partitions=4) as broker:
            yield Services(root, zookeeper, broker)
    finally:
        zookeeper.stop()
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)


@dataclass
class Seeded:
    """A topic whose `released` ledgers phase one enqueues and its commit drops."""

    topic: TopicName
    kept: list[int]
    released: list[int]
    cursor: int

    def referenced(self) -> set[int]:
        return {*self.kept, self.cursor}


def ledger_znode(topic: TopicName, component: LedgerComponent) -> bytes:
    metadata = LedgerMetadataFormat(quorumSize=2, ensembleSize=2, length=0, ackQuorumSize=2)
    metadata.state = LedgerMetadataFormat.CLOSED
    metadata.segment.add(ensembleMember=["bookie-1:3181", "bookie-2:3181"], firstEntryId=0)
    for key, value in pulsar_custom_metadata(topic, component).items():
        metadata.customMetadata.add(key=key, value=value)
    return bk.encode_v3(metadata)


def create_ledgers(client: KazooClient, ledgers: Sequence[tuple[int, bytes]]) -> None:
    """BookKeeper ledger-metadata znodes, pipelined: buckets first, then the leaves."""
    paths = [(bk.ledger_path(ledger_id), data) for ledger_id, data in ledgers]
    for parent in sorted({path.rsplit("/", 1)[0] for path, _ in paths}):
        client.ensure_path(parent)
    for start in range(0, len(paths), WINDOW):
        window = paths[start : start + WINDOW]
        for result in [client.create_async(path, data) for path, data in window]:
            result.get()


def seed(
    client: KazooClient,
    store: MetadataStore,
    topics: Sequence[TopicName],
    released_per_topic: int,
    kept_per_topic: int = 2,
    first_id: int = 1,
) -> list[Seeded]:
    """Managed ledgers in Pulsar's layout, their ledgers and one cursor ledger each; the
    released ledgers come first, so each is below the topic's largest id (never "stale")."""
    seeded, ledgers, next_id = [], [], first_id
    for topic in topics:
        count = released_per_topic + kept_per_topic
        ids = list(range(next_id, next_id + count + 1))
        next_id += count + 1
        data = ledger_znode(topic, LedgerComponent.MANAGED_LEDGER)
        ledgers += [(i, data) for i in ids[:-1]]
        ledgers.append((ids[-1], ledger_znode(topic, LedgerComponent.MANAGED_CURSOR)))
        seeded.append(Seeded(topic, ids[released_per_topic:-1], ids[:released_per_topic], ids[-1]))
    create_ledgers(client, ledgers)
    writer = ManagedLedgerWriter(store)
    for entry in seeded:
        writer.write(entry.topic, [*entry.released, *entry.kept], version=None)
        writer.write_cursor(entry.topic, "sub", entry.cursor)
    return seeded


def pending(topic: TopicName, ledger_id: int) -> PendingDeleteLedgerInfo:
    return PendingDeleteLedgerInfo(
        topic, LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, ledger_id
    )


def enqueue_then_commit(sidecar: Sidecar, seeded: Sequence[Seeded], batch: int = 5000) -> None:
    """Phase one for every released ledger, then the metadata commit that drops them."""
    writer = ManagedLedgerWriter(sidecar.metadata)
    infos = [pending(entry.topic, i) for entry in seeded for i in entry.released]
    for start in range(0, len(infos), batch):
        sidecar.phase_one.enqueue(infos[start : start + batch])
    for entry in seeded:
        writer.remove_ledgers(entry.topic, entry.released)


def remaining(store: MetadataStore) -> set[int]:
    return set(BookKeeperLedgerStorage(store).ledger_ids())


def topics_over(namespaces: int, topics: int, tenant: str = "bench") -> list[TopicName]:
    """`topics` topics spread evenly over `namespaces` namespaces."""
    names = [NamespaceName(f"{tenant}{n}", "ns") for n in range(namespaces)]
    return [TopicName(names[i % namespaces], f"topic-{i}") for i in range(topics)]


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile; NaN of nothing."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m bench.{prog}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON object")
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--workdir", type=Path, help="keep the services' files here")
    return parser


def render(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[object]], console: Console
) -> None:
    table = Table(*columns, title=title, title_justify="left")
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
    console.print(table)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def finish(result: dict[str, Any], as_json: bool) -> dict[str, Any]:
    if as_json:
        print(json.dumps(result), flush=True)
    return result


def console_for(as_json: bool) -> Console:
    return Console(stderr=as_json, width=120, soft_wrap=True)
