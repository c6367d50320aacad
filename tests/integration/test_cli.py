"""The command line as an operator uses it: a real process, real output, real exit codes."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pulsar
import pytest

from deletion.domain import message
from deletion.domain.topics import NamespaceName
from harness.janitor import embedded_store
from harness.leaks import survivors
from harness.process import run_cli
from ledger_janitor.demo.embedded import EmbeddedBroker


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, columns=200, timeout=timeout, env=env)


def test_config_show_names_each_value_and_its_source(tmp_path: Path) -> None:
    properties = tmp_path / "janitor.properties"
    properties.write_text(
        "# Pulsar-style\nsendDelaySecondsOfTwoPhaseDeletion=5\nauthParams=token:s3cret\n"
    )
    result = cli(
        "config",
        "show",
        "--json",
        "--config",
        str(properties),
        "--set",
        "reconsumeLaterSecondsOfTwoPhaseDeletion=30",
        env={"LEDGER_JANITOR_LEDGER_DELETION_PARALLELISM_OF_TWO_PHASE_DELETION": "8"},
    )
    assert result.returncode == 0, result.stderr
    rows = {row["key"]: row for row in json.loads(result.stdout)}
    assert rows["sendDelaySecondsOfTwoPhaseDeletion"]["value"] == "5"
    assert rows["sendDelaySecondsOfTwoPhaseDeletion"]["source"] == f"file:{properties}"
    assert rows["ledgerDeletionParallelismOfTwoPhaseDeletion"]["source"].startswith("env:")
    assert rows["reconsumeLaterSecondsOfTwoPhaseDeletion"] == {
        **rows["reconsumeLaterSecondsOfTwoPhaseDeletion"],
        "value": "30",
        "source": "cli",
    }
    assert rows["authParams"]["value"] == "***"
    assert "s3cret" not in result.stdout


def test_unknown_key_and_bad_value_fail_with_help(tmp_path: Path) -> None:
    result = cli(
        "config",
        "show",
        "--set",
        "sendDelaySecondsOfTwoPhaseDeleton=5",
        "--set",
        "reconsumeLaterSecondsOfTwoPhaseDeletion=soon",
    )
    assert result.returncode == 2
    assert "did you mean 'sendDelaySecondsOfTwoPhaseDeletion'" in result.stderr
    assert "reconsumeLaterSecondsOfTwoPhaseDeletion" in result.stderr
    assert "soon" in result.stderr


def test_help_explains_every_command() -> None:
    result = cli("--help")
    assert result.returncode == 0
    for command in ("run", "enqueue", "demo", "config", "archive", "cursor", "audit"):
        assert command in result.stdout


@pytest.mark.parametrize(
    "command",
    [
        "run",
        "enqueue",
        "demo",
        "config show",
        "archive list",
        "archive drain",
        "cursor decode",
        "cursor encode",
        "cursor inspect",
        "audit",
    ],
)
def test_every_help_page_renders(command: str) -> None:
    result = cli(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout


def test_enqueue_sends_a_delayed_pending_deletion(
    broker: EmbeddedBroker, namespace: NamespaceName, tmp_path: Path
) -> None:
    client = pulsar.Client(
        broker.service_url,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(tmp_path / "c.log")),
    )
    consumer = client.subscribe(
        namespace.deletion_topic, "inspect", initial_position=pulsar.InitialPosition.Earliest
    )
    try:
        result = cli(
            "enqueue",
            f"{namespace}/orders",
            "41",
            "42",
            "--component",
            "MANAGED_CURSOR",
            "--broker-url",
            broker.service_url,
            "--metadata-store",
            embedded_store(tmp_path / "janitor.db"),
            "--set",
            "sendDelaySecondsOfTwoPhaseDeletion=7",
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.count("enqueued MANAGED_CURSOR LEDGER") == 2
        received = sorted((consumer.receive(10_000) for _ in range(2)), key=lambda m: m.data())
        infos = [message.decode(m.data()) for m in received]
        assert {i.ledger_id for i in infos} == {41, 42}
        assert all(str(i.topic_name) == f"{namespace}/orders" for i in infos)
        assert all(m.properties()["DELAY_TIME"] == "7000" for m in received)
    finally:
        client.close()


def test_demo_deletes_only_unreferenced_ledgers_and_leaves_no_process() -> None:
    probe = uuid.uuid4().hex
    result = cli("demo", "--json", env={"DEMO_PROBE": probe})
    # Everything the demo started carries the probe; the demo has exited, so must they.
    assert survivors("DEMO_PROBE", probe, grace_seconds=2) == []
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["referenced_ledgers_deleted"] == 0
    assert summary["deleted"] == 36
    assert summary["already_gone"] == 1  # the duplicate
    assert summary["archived"] == 3  # the crash before commit, the hostile and the garbage message
    # Every ledger is seconds old: each of the 37 released (and the duplicate) waits once for
    # the demo's 3 s age rule; the crash before commit is reconsumed 3 times, then archived.
    assert summary["reconsumed"] == 37 + 3
    assert summary["enqueued"] == summary["handled"]
    assert set(summary) >= {"enqueued", "deleted", "reconsumed", "archived", "seconds"}
    # What a person reads, on stderr beside the JSON: the table and the verdict line.
    assert "phase two" in result.stderr and "demo/orders" in result.stderr
    assert f"referenced ledgers deleted: 0 of {summary['referenced_ledgers']}" in result.stderr
