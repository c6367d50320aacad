"""`archive list` as an operator runs it, and the commands that talk to the broker when it is
not there: a real process, its human output and exit code."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pulsar

from deletion.adapters.pulsar_metadata import ManagedLedgerWriter
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.topics import ARCHIVE_SUBSCRIPTION, ARCHIVE_TOPIC, NamespaceName, TopicName
from harness.janitor import embedded_store
from harness.process import run_cli
from ledger_janitor.commands.console import one_line
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port
from ledger_janitor.demo.seeding import pending

QUICKLY = 10.0  # the Pulsar client alone would wait 30 s


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, columns=200)


def archive(
    broker: EmbeddedBroker,
    namespace: NamespaceName,
    ledger_id: int,
    log: Path,
    topic: str = "orders",
    reason: str = "gave up after 3 reconsumes: [still] referenced",
) -> None:
    """One message in the namespace's archive, as phase two leaves it."""
    client = pulsar.Client(
        broker.service_url, logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log))
    )
    try:
        # The listing's subscription exists before the message, as the archive's does.
        client.subscribe(namespace.archive_topic, ARCHIVE_SUBSCRIPTION).close()
        producer = client.create_producer(namespace.archive_topic)
        info = pending(TopicName(namespace, topic), ledger_id)
        producer.send(message.encode(info), properties={props.ARCHIVE_REASON: reason})
    finally:
        client.close()


def test_archive_list_without_namespace_finds_every_namespace_with_an_archive(
    broker: EmbeddedBroker, namespace: NamespaceName, tmp_path: Path
) -> None:
    """The namespace is known only by its archive topic's managed ledger: its deletion topic
    is gone, and nothing registered it. It used to print "0 archived"."""
    store_path = tmp_path / "janitor.db"
    embedded_store(store_path)
    store = SqliteMetadataStore(str(store_path))
    try:
        store.create(
            f"/managed-ledgers/{namespace.tenant}/{namespace.namespace}/persistent/{ARCHIVE_TOPIC}",
            b"",
        )
    finally:
        store.close()
    archive(broker, namespace, 4242, tmp_path / "client.log")
    listed = cli(
        "archive", "list", "--metadata-store", f"sqlite:{store_path}",
        "--broker-url", broker.service_url,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "1 archived in 1 of 1 namespace" in listed.stdout
    assert "1 namespaces" not in listed.stdout
    assert str(namespace) in listed.stdout and "4242" in listed.stdout
    assert "[still] referenced" in listed.stdout
    assert f"archived per namespace: {namespace} 1; checked: {namespace}" in listed.stdout


def test_archive_list_with_no_namespace_known_says_what_to_do(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    listed = cli(
        "archive", "list", "--metadata-store", embedded_store(tmp_path / "empty.db"),
        "--broker-url", broker.service_url,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "0 archived" not in listed.stdout
    assert "no namespace has a deletion or archive topic" in listed.stdout
    assert "pass --namespace tenant/namespace" in listed.stdout


def test_commands_that_need_the_broker_say_at_once_that_it_is_not_there(tmp_path: Path) -> None:
    url = f"pulsar://127.0.0.1:{free_port()}"
    store = embedded_store(tmp_path / "janitor.db")
    for args in (
        ("archive", "list", "-n", "a/b"),
        ("archive", "drain", "-n", "a/b", "--yes"),
        ("enqueue", "a/b/t", "1"),
    ):
        began = time.monotonic()
        result = cli(*args, "--metadata-store", store, "--broker-url", url)
        assert time.monotonic() - began < QUICKLY, args
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"error: cannot reach the broker at {url}"), result.stderr
        assert result.stderr.count("\n") == 1 and result.stdout == ""


def piped(*args: str) -> subprocess.CompletedProcess[str]:
    """As `... | cat` or a pod's log sees it: no terminal, and no COLUMNS to go by."""
    return run_cli(*args, columns=None)


def test_tables_off_a_terminal_hold_every_value_whole_one_row_a_line(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """Rich assumed 80 columns off a terminal and printed `namesp…`."""
    namespace = NamespaceName(f"tenant-{uuid.uuid4().hex}", "namespace-of-the-payments-team")
    topic = "settlement-events-of-the-european-region-partition-11"
    reason = "gave up after 10 reconsumes:\nledger still referenced by its managed ledger " * 2
    store_path = tmp_path / "janitor.db"
    embedded_store(store_path)
    store = SqliteMetadataStore(str(store_path))
    try:
        local = f"/managed-ledgers/{namespace.tenant}/{namespace.namespace}/persistent"
        store.create(f"{local}/{ARCHIVE_TOPIC}", b"")
        ManagedLedgerWriter(store).ensure_namespace(namespace)  # a cluster's namespace
    finally:
        store.close()
    for ledger_id in (424242, 424243):
        archive(broker, namespace, ledger_id, tmp_path / "client.log", topic, reason)
    where = ("--metadata-store", f"sqlite:{store_path}", "--broker-url", broker.service_url)
    listed = piped("archive", "list", *where)
    # No --namespace on either: both read the same namespaces.
    drained = piped("archive", "drain", "--dry-run", *where)
    for result in (listed, drained):
        assert result.returncode == 0, result.stderr
        assert "…" not in result.stdout
        for archived_id in ("424242", "424243"):
            (row,) = [line for line in result.stdout.splitlines() if archived_id in line]
            assert str(namespace) in row and f"{namespace}/{topic}" in row
    listed_row = next(line for line in listed.stdout.splitlines() if "424242" in line)
    assert one_line(reason) in listed_row  # the reason's lines joined: still one row
    assert "2 archived in 1 of 1 namespace" in listed.stdout
    assert "1 namespaces" not in listed.stdout
    assert drained.stdout.endswith(" 2 would drop (already gone)\n") and drained.stderr == ""
