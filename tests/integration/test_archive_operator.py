"""`archive list` and `archive drain` as an operator meets them (issue 31): a real process on
the embedded broker and SQLite store, its stdout and stderr read whole, off a terminal."""

from __future__ import annotations

import subprocess

from consumers.archive import list_archive
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory
from harness.process import run_cli
from ledger_janitor.demo.embedded import EmbeddedBroker
from ledger_janitor.demo.seeding import TopicSeeder, pending
from ledger_janitor.sidecar.wiring import Sidecar

# The test's ledgers are seconds old, and one machine has one clock.
NO_AGE_RULE = (
    "--set", "minLedgerAgeSecondsOfTwoPhaseDeletion=0",
    "--set", "clockSkewAllowanceSecondsOfTwoPhaseDeletion=0",
)  # fmt: skip


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, columns=None)  # as `| cat` or a pod's log sees it


def archive(sidecar: Sidecar, infos: list[PendingDeleteLedgerInfo], reason: str) -> None:
    """Messages in the archive as phase two leaves them."""
    for info in infos:
        properties = {props.ARCHIVE_REASON: reason, props.RECONSUME_TIMES: "11"}
        sidecar.pool.send(
            info.topic_name.namespace.archive_topic, message.encode(info), properties
        ).result(10)


def test_a_dry_run_drain_says_what_it_would_do_and_changes_nothing(
    embedded: JanitorFactory, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    """It printed `drained ...` and `2 already_gone` for a drain that changed nothing."""
    backend = embedded.backend
    seeder = TopicSeeder(backend.metadata, backend.factory)
    seeded = seeder.seed(TopicName(namespace, "orders"), ledgers=4)
    freed, gone, kept = seeded.ledgers[:3]
    seeder.release(seeded, [freed, gone])
    backend.ledgers.delete_ledger(gone)
    sidecar = embedded.sidecar()
    archive(sidecar, [pending(seeded.topic, i) for i in (freed, gone, kept)], "gave up: timeout")
    where = ("--metadata-store", backend.metadata_url, "--broker-url", broker.service_url)

    dry = cli("archive", "drain", "-n", str(namespace), "--dry-run", *NO_AGE_RULE, *where)

    assert dry.returncode == 0, dry.stderr
    assert "drained" not in dry.stdout and "already_gone" not in dry.stdout
    rows = {
        i: row for i in (freed, gone, kept) for row in dry.stdout.splitlines() if f" {i} " in row
    }
    assert "would delete" in rows[freed]
    assert "would drop (already gone)" in rows[gone]
    assert "would archive again" in rows[kept]
    assert dry.stdout.startswith(f"would drain {namespace} (dry run: nothing changed)")
    assert dry.stdout.endswith(
        f"\nwould drain 3 messages in {namespace} (dry run: nothing changed): 1 would delete, "
        "1 would drop (already gone), 1 would archive again\n"
    ), dry.stdout
    assert backend.exists(freed) and backend.exists(kept)
    assert len(list_archive(sidecar.client, namespace, wait_seconds=1.0)) == 3

    done = cli("archive", "drain", "-n", str(namespace), "--yes", *NO_AGE_RULE, *where)

    assert done.returncode == 0, done.stderr
    assert "would" not in done.stdout
    assert done.stdout.startswith(f"drained {namespace}")
    assert done.stdout.endswith(
        f"\ndrained 3 messages in {namespace}: 1 deleted, 1 already gone, 1 archived again\n"
    ), done.stdout
    assert not backend.exists(freed) and backend.exists(kept)
