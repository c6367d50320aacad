"""Every command on a store that is not the cluster's says so in one line, exit 2, having
written nothing; and `cursor inspect` on a ZooKeeper that is not there fails as fast as the
others. Run as an operator runs them (harness.process.run_cli), next to a real ZooKeeper."""

from __future__ import annotations

import re
import time

import pytest
from kazoo.client import KazooClient

from harness.process import run_cli
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port

COMMANDS = {
    "enqueue": ["enqueue", "public/default/t", "5"],
    "archive list": ["archive", "list", "--namespace", "public/default"],
    "archive drain": ["archive", "drain", "--namespace", "public/default", "--yes"],
    "audit": ["audit"],
    "cursor inspect": ["cursor", "inspect", "public/default/t", "sub"],
}


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_mistyped_chroot_is_one_error_line_and_nothing_is_created(
    zookeeper: ZooKeeperServer, broker: EmbeddedBroker, chroot: str, command: list[str]
) -> None:
    store = f"{zookeeper.hosts}{chroot}"
    broker_url = [] if command[0] == "cursor" else ["--broker-url", broker.service_url]
    done = run_cli(*command, "--metadata-store", f"zk:{store}", *broker_url)
    assert done.returncode == 2, (done.stdout, done.stderr)
    # no kazoo warning, no Spark: the one line, naming the store and what it lacks
    assert re.fullmatch(
        rf"error: no /(ledgers/LAYOUT|admin) in ZooKeeper at {store}: wrong store or chroot\? "
        r"\(nothing is created\)\n",
        done.stderr,
    ), done.stderr
    client = KazooClient(hosts=zookeeper.hosts, timeout=30)
    client.start(timeout=30)
    try:
        assert client.exists(chroot) is None
    finally:
        client.stop()
        client.close()


def test_cursor_inspect_without_zookeeper_fails_in_seconds_in_one_line() -> None:
    store = f"zk:127.0.0.1:{free_port()}/pulsar"
    began = time.monotonic()
    done = run_cli(
        "cursor", "inspect", "public/default/t", "sub", "--metadata-store", store,
        "--set", "operationTimeoutSeconds=60",  # how long a ZooKeeper client would wait
    )  # fmt: skip
    took = time.monotonic() - began
    assert done.returncode == 2
    assert re.fullmatch(
        rf"error: cannot reach the metadata store at {store} \(127\.0\.0\.1:\d+: "
        r"Connection refused\)\n",
        done.stderr,
    ), done.stderr
    # a TCP probe (3 s at most), not kazoo's retries for the whole operation time-out (60 s
    # here, 30 s by default: 32 s and 10 log lines before); the margin is for a busy machine
    assert took < 45, took
