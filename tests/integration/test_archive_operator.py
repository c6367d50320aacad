"""`archive list` and `archive drain` as an operator meets them (issue 31): a real process on
the embedded broker and SQLite store, its stdout and stderr read whole, off a terminal."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import time
import uuid
from pathlib import Path

import pytest

from consumers.archive_listing import list_archive
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.topics import ARCHIVE_TOPIC, NamespaceName, TopicName
from harness.janitor import Backend, JanitorFactory
from harness.process import ROOT, run_cli
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


def archive(
    sidecar: Sidecar,
    infos: list[PendingDeleteLedgerInfo],
    reason: str,
    first_ms: int | None = None,
    at_ms: int | None = None,
) -> None:
    """Messages in the archive as phase two leaves them."""
    for info in infos:
        properties = {props.ARCHIVE_REASON: reason, props.RECONSUME_TIMES: "11"}
        if first_ms is not None and at_ms is not None:
            properties[props.FIRST_ATTEMPT_TIME] = str(first_ms)
            properties[props.ARCHIVE_TIME] = str(at_ms)
        sidecar.pool.send(
            info.topic_name.namespace.archive_topic, message.encode(info), properties
        ).result(10)


def in_store(backend: Backend, namespace: NamespaceName) -> None:
    """The namespace's archive topic in the metadata store, as the broker records it: how
    `archive list` without --namespace finds it."""
    local = f"/managed-ledgers/{namespace.tenant}/{namespace.namespace}/persistent"
    backend.metadata.create(f"{local}/{ARCHIVE_TOPIC}", b"")


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


def test_a_ledger_archived_twice_is_one_row_with_its_count_and_newest_reason(
    embedded: JanitorFactory, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    """A ledger archived, requeued by a drain and archived again showed as two rows."""
    topic = TopicName(namespace, "orders")
    sidecar = embedded.sidecar()
    hour = 3_600_000
    archive(sidecar, [pending(topic, 7)], "gave up: the bookie was down", 1 * hour, 2 * hour)
    archive(sidecar, [pending(topic, 8)], "gave up: timeout", 1 * hour, 2 * hour)
    archive(sidecar, [pending(topic, 7)], "gave up: still referenced", 3 * hour, 4 * hour)
    where = ("-n", str(namespace), "--metadata-store", embedded.backend.metadata_url,
             "--broker-url", broker.service_url)  # fmt: skip

    listed = cli("archive", "list", *where)
    as_json = cli("archive", "list", "--json", *where)

    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if " 7 " in line]
    assert "2x" in row and "still referenced" in row and "bookie" not in row
    assert "1970-01-01 01:00:00" in row and "1970-01-01 04:00:00" in row  # first and last try
    assert "2 archived in 1 of 1 namespace (3 messages: a ledger archived again is one row)" in (
        listed.stdout
    )
    assert f"archived per namespace: {namespace} 2;" in listed.stdout
    rows = {r["ledger_id"]: r for r in json.loads(as_json.stdout)}
    assert set(rows) == {7, 8}
    assert rows[7]["archivings"] == 2 and rows[7]["reason"] == "gave up: still referenced"
    assert len(rows[7]["message_ids"]) == 2 and rows[8]["archivings"] == 1


LISTED_NAMESPACES = 5
WAIT_SECONDS = 8.0


def test_archives_are_read_side_by_side_not_one_wait_after_another(
    embedded: JanitorFactory, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """3 namespaces took 8.1 s: each archive counted as read after --wait seconds without a
    message, one after the other. pulsar-lite cannot say where a topic ends, so each archive
    here waits --wait: all of them at once take one wait (plus start-up), never one each."""
    sidecar = embedded.sidecar()
    namespaces = [
        NamespaceName(f"t{uuid.uuid4().hex[:10]}", "ns") for _ in range(LISTED_NAMESPACES)
    ]
    for ns in namespaces:
        in_store(embedded.backend, ns)
        archive(sidecar, [pending(TopicName(ns, "orders"), 5)], "gave up: timeout")
    args = ("archive", "list", "--wait", str(WAIT_SECONDS), "--metadata-store",
            embedded.backend.metadata_url, "--broker-url", broker.service_url)  # fmt: skip

    began = time.monotonic()
    listed = cli(*args)
    took = time.monotonic() - began

    assert listed.returncode == 0, listed.stderr
    assert f"{LISTED_NAMESPACES} archived in {LISTED_NAMESPACES} of {LISTED_NAMESPACES}" in (
        listed.stdout
    )
    # One after the other: 5 waits, 40 s at least. Side by side: one wait, and 24 s left for
    # starting the process and reaching the store and broker (9 s at a load average of 21).
    assert took < (LISTED_NAMESPACES - 1) * WAIT_SECONDS, took
    assert listed.stderr == ""  # off a terminal no progress is shown


def test_on_a_terminal_progress_goes_to_stderr_and_the_table_to_stdout(
    embedded: JanitorFactory, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    in_store(embedded.backend, namespace)
    archive(embedded.sidecar(), [pending(TopicName(namespace, "orders"), 5)], "gave up: x")
    args = ["archive", "list", "--metadata-store", embedded.backend.metadata_url,
            "--broker-url", broker.service_url]  # fmt: skip
    stdout, terminal = with_stderr_on_a_terminal(args)
    assert "reading the archives:" in terminal and "namespaces read" in terminal, terminal
    assert "1 archived in 1 of 1 namespace" in stdout
    assert "reading the archives" not in stdout and "\x1b" not in stdout


def with_stderr_on_a_terminal(args: list[str]) -> tuple[str, str]:
    """`ledger-janitor ARGS` with stderr on a pseudo-terminal (80 x 24) and stdout a pipe:
    (stdout, what the terminal was sent)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "ledger_janitor", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**environment, "TERM": "xterm"},
    )
    os.close(follower)
    sent = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        sent += chunk
    os.close(leader)
    stdout = process.stdout.read().decode() if process.stdout else ""
    assert process.wait(timeout=120) == 0, sent.decode(errors="replace")
    return stdout, sent.decode(errors="replace")


@pytest.mark.parametrize("backend", ["zookeeper"], indirect=True)
def test_a_drain_just_connected_waits_out_the_settling_instead_of_requeueing(
    janitor: JanitorFactory, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    """With the age rule on, nothing is decided on a ZooKeeper connection younger than
    metadataStoreSessionTimeoutMillis: a drain (a fresh process, so a fresh connection)
    requeued every message it read. It waits that out first, and says so on stderr."""
    backend = janitor.backend
    seeder = TopicSeeder(backend.metadata, backend.factory)
    seeded = seeder.seed(TopicName(namespace, "orders"), ledgers=3)
    (gone,) = seeded.ledgers[:1]
    seeder.release(seeded, [gone])
    backend.ledgers.delete_ledger(gone)
    sidecar = janitor.sidecar()
    archive(sidecar, [pending(seeded.topic, gone)], "gave up: timeout")
    where = ("--metadata-store", backend.metadata_url, "--broker-url", broker.service_url)
    settling = ("--set", "metadataStoreSessionTimeoutMillis=2000",
                "--set", "minLedgerAgeSecondsOfTwoPhaseDeletion=600")  # fmt: skip

    done = cli("archive", "drain", "-n", str(namespace), "--yes", *settling, *where)

    assert done.returncode == 0, done.stderr
    assert "to settle (metadataStoreSessionTimeoutMillis)" in done.stderr, done.stderr
    assert done.stdout.endswith(f"\ndrained 1 message in {namespace}: 1 already gone\n"), (
        done.stdout
    )
