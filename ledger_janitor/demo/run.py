"""`ledger-janitor demo`: the whole protocol on one machine, nothing to set up.

An embedded broker, SQLite metadata and ledger stores, three namespaces of topics. Some
ledgers are released through phase one, one phase one "crashes" before its metadata
commit, one message is hostile and one is garbage; a worker with short delays handles it
all, and the demo checks that no ledger still referenced was deleted.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from config import ServiceConfiguration
from consumers.observer import Observer
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.opening import make_embedded_store
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.domain.message import LedgerComponent, encode
from deletion.domain.outcome import Outcome, Result
from deletion.domain.topics import NamespaceName, TopicName
from ledger_janitor.commands.console import count, plural
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import SeededTopic, TopicSeeder, pending, store_references
from ledger_janitor.demo.workdir import prepare_workdir
from ledger_janitor.sidecar.wiring import Sidecar, open_sidecar

NAMESPACES = ("demo/orders", "demo/payments", "demo/audit")
# Local names that Pulsar must URL-encode: a wrong encoding would make them look unused.
TOPICS = ("events-partition-0", "events-partition-1", "ledger:history v2")
TERMINAL = {Outcome.DELETED, Outcome.ALREADY_GONE, Outcome.ARCHIVED}
TIMEOUT_SECONDS = 50.0


def demo_configuration(root: Path, service_url: str) -> ServiceConfiguration:
    return ServiceConfiguration().with_overrides(
        broker_service_url=service_url,
        metadata_store_url=f"sqlite:{root / 'janitor.db'}",
        send_delay_seconds_of_two_phase_deletion=2,
        clock_skew_allowance_seconds_of_two_phase_deletion=0,  # one machine, one clock
        # Every ledger here was just created: each waits once until it is 3 s old.
        min_ledger_age_seconds_of_two_phase_deletion=3,
        reconsume_later_seconds_of_two_phase_deletion=1,
        max_reconsume_times_of_two_phase_deletion=3,
        in_use_ledgers_cache_ttl_seconds=5,
    )


def _phase_one(sidecar: Sidecar, seeder: TopicSeeder, seeded: list[SeededTopic]) -> int:
    """Release ledgers the two-phase way; return how many messages were sent."""
    sent, first_released = 0, seeded[0].ledgers[0]
    for entry in seeded:
        released = entry.ledgers[:3]
        infos = [pending(entry.topic, ledger_id) for ledger_id in released]
        sidecar.phase_one.enqueue_then_commit(infos, partial(seeder.release, entry, released))
        old_cursor = seeder.rotate_cursor(entry)
        sidecar.phase_one.enqueue(
            [pending(entry.topic, old_cursor, LedgerComponent.MANAGED_CURSOR)]
        )
        sent += len(infos) + 1
    first, second = seeded[0], seeded[-1]
    # A duplicate (a broker retried its send): deleted once, both acked.
    sidecar.phase_one.enqueue([pending(first.topic, first_released)])
    # A crash after the send, before the metadata commit: the ledger stays referenced.
    sidecar.phase_one.enqueue([pending(first.topic, first.ledgers[-1])])
    # Hostile: a message on one namespace's topic naming another tenant's ledger.
    hostile = pending(second.topic, second.ledgers[-1])
    sidecar.pool.send(first.topic.namespace.deletion_topic, encode(hostile), {}).result(10)
    # Garbage on a deletion topic: archived with its bytes intact.
    sidecar.pool.send(second.topic.namespace.deletion_topic, b"\x00not avro", {}).result(10)
    return sent + 4


def _referenced_now(sidecar: Sidecar, seeded: list[SeededTopic]) -> set[int]:
    source = MetadataInUseLedgers(sidecar.metadata)
    return {ledger for entry in seeded for ledger in source.fetch(entry.topic).ledger_ids}


def run_demo(workdir: Path | None, console: Console) -> dict[str, Any]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ledger-janitor-demo-") as tmp:
        root = workdir or Path(tmp)
        console.print(Text.assemble(("ledger-janitor demo", "bold"), f" in {root}"))
        if workdir is not None:
            cleared = prepare_workdir(workdir)
            if cleared:
                console.print(f"removed the previous demo's files: {cleared}", soft_wrap=True)
        with EmbeddedBroker(root / "broker") as broker:
            config = demo_configuration(root, broker.service_url)
            make_embedded_store(root / "janitor.db")  # the one store the demo makes: its own
            sidecar = open_sidecar(config, client_log=root / "broker" / "client.log")
            try:
                return _run(sidecar, console, started)
            finally:
                sidecar.close()


def _run(sidecar: Sidecar, console: Console, started: float) -> dict[str, Any]:
    assert isinstance(sidecar.ledgers, SqliteLedgerStorage)
    seeder = TopicSeeder(sidecar.metadata, sidecar.ledgers)
    seeded = [
        seeder.seed(TopicName(NamespaceName.parse(ns), topic), ledgers=6, schema_versions=1)
        for ns in NAMESPACES
        for topic in TOPICS
    ]
    console.print(_seeded_line(seeded, len(sidecar.ledgers.ledger_ids())), soft_wrap=True)
    expected = _phase_one(sidecar, seeder, seeded)
    console.print(
        f"phase one: {plural(expected, 'message')} enqueued (delay 2 s); "
        f"{plural(len(seeded), 'cursor')} moved to a new ledger, "
        f"{plural(len(sidecar.ledgers.ledger_ids()), 'ledger')} in the store now",
        soft_wrap=True,
    )
    results: list[Result] = []
    done = threading.Event()
    lock = threading.Lock()

    class Record(Observer):
        def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
            with lock:
                results.append(result)
                if sum(r.outcome in TERMINAL for r in results) >= expected:
                    done.set()

    worker = sidecar.worker(observers=[Record()], refresh_interval_seconds=0.5)
    worker.start()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("phase two", total=expected)
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while not done.wait(0.2) and time.monotonic() < deadline:
            with lock:
                progress.update(task, completed=sum(r.outcome in TERMINAL for r in results))
    worker.stop()
    return _report(sidecar, seeded, results, expected, console, started)


def _report(
    sidecar: Sidecar,
    seeded: list[SeededTopic],
    results: list[Result],
    expected: int,
    console: Console,
    started: float,
) -> dict[str, Any]:
    assert isinstance(sidecar.ledgers, SqliteLedgerStorage)
    deleted_ids = {ledger for ledger, _ in sidecar.ledgers.deletions()}
    referenced = _referenced_now(sidecar, seeded)
    counts = Counter(r.outcome for r in results)
    table = Table(
        "namespace", "deleted", "already gone", "reconsumed", "archived", title="phase two"
    )
    by_namespace: dict[str, Counter[Outcome]] = {}
    for r in results:
        key = str(r.info.topic_name.namespace) if r.info else "(undecodable)"
        by_namespace.setdefault(key, Counter())[r.outcome] += 1
    for namespace, c in sorted(by_namespace.items()):
        table.add_row(
            namespace,
            *(
                str(c[o])
                for o in (
                    Outcome.DELETED,
                    Outcome.ALREADY_GONE,
                    Outcome.RECONSUMED,
                    Outcome.ARCHIVED,
                )
            ),
        )
    console.print(table)
    for r in results:
        if r.outcome is Outcome.ARCHIVED:
            console.print(f"  archived: {r.reason}", soft_wrap=True)
    left = set(sidecar.ledgers.ledger_ids())
    unreferenced = sorted(left - store_references(sidecar.metadata))
    summary = {
        "enqueued": expected,
        "deleted": counts[Outcome.DELETED],
        "already_gone": counts[Outcome.ALREADY_GONE],
        "reconsumed": counts[Outcome.RECONSUMED],
        "archived": counts[Outcome.ARCHIVED],
        "handled": sum(counts[o] for o in TERMINAL),
        "referenced_ledgers": len(referenced),
        "referenced_ledgers_deleted": len(referenced & deleted_ids),
        "ledgers_left": len(left),
        "unreferenced_left": unreferenced,
        "seconds": round(time.monotonic() - started, 2),
    }
    style = "green" if summary["referenced_ledgers_deleted"] == 0 else "red"
    console.print(
        Text.assemble(
            (f"referenced ledgers deleted: {summary['referenced_ledgers_deleted']}", style),
            f" of {count(len(referenced))}; {plural(len(deleted_ids), 'unreferenced ledger')}"
            f" deleted in {summary['seconds']} s",
        ),
        soft_wrap=True,
    )
    kept = f"the crash before commit's ledger {unreferenced}" if unreferenced else "none"
    console.print(
        f"left in the store: {plural(len(left), 'ledger')}; unreferenced by any metadata: {kept}",
        soft_wrap=True,
    )
    return summary


def _seeded_line(seeded: list[SeededTopic], in_store: int) -> str:
    data = sum(len(entry.ledgers) for entry in seeded)
    schemas = len({ledger for entry in seeded for ledger in entry.schema_ledgers})
    return (
        f"seeded {plural(len(seeded), 'topic')} in {plural(len(NAMESPACES), 'namespace')}: "
        f"{count(data)} data, {count(len(seeded))} cursor and {count(schemas)} schema ledgers "
        f"({count(in_store)} in the store; a partitioned topic's partitions share one schema)"
    )
