"""Log levels an operator can choose (issue 31): `-v/--verbose` shows the debug lines (the
keys of a broker.conf that are not ours, "listed at debug level", could not be seen), and
`run -q` keeps its start-up line, which names everything it will use. Every command that
logs takes the same flags. Real processes, stderr read whole, off a terminal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.janitor import embedded_store
from harness.process import run_cli, wait_until
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port
from tests.integration.run_rig import Run, running

IGNORED = "keys not ours, ignored: clusterName"
STARTING = "starting: metadata store"
# The commands that log, as a command path and arguments that make it fail at once (no store
# or broker there) after it read its configuration.
LOGGING_COMMANDS = {
    "enqueue": ("enqueue", "a/b/t", "1"),
    "archive list": ("archive", "list", "-n", "a/b"),
    "archive drain": ("archive", "drain", "-n", "a/b", "--dry-run"),
    "audit": ("audit",),
    "cursor inspect": ("cursor", "inspect", "a/b/t", "sub"),
    "config show": ("config", "show"),
}


def broker_conf(tmp_path: Path) -> Path:
    """A broker.conf as operators have it: our keys among the broker's own."""
    conf = tmp_path / "broker.conf"
    conf.write_text("clusterName=standalone\ntwoPhaseDeletionEnabled=true\n")
    return conf


def store(tmp_path: Path) -> str:
    return embedded_store(tmp_path / "janitor.db")  # an existing store, as a cluster's is


def started(run: Run) -> None:
    wait_until(lambda: run.status("/ready") == 200, 90, "readiness")


def test_run_verbose_logs_the_ignored_broker_keys_at_debug_level(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    args = ("-c", str(broker_conf(tmp_path)), "--metadata-store", store(tmp_path))
    with running(*args, "--broker-url", broker.service_url, "-v") as run:
        started(run)
        run.terminate()
    assert run.said(IGNORED, level="debug"), "".join(run.stderr)
    assert run.said(STARTING, level="info") and run.said("worker running", level="info")
    assert run.stdout == []


def test_run_default_logs_info_but_not_debug(broker: EmbeddedBroker, tmp_path: Path) -> None:
    args = ("-c", str(broker_conf(tmp_path)), "--metadata-store", store(tmp_path))
    with running(*args, "--broker-url", broker.service_url) as run:
        started(run)
        run.terminate()
    assert run.said(STARTING, level="info") and run.said("worker running", level="info")
    assert not run.said(IGNORED), "".join(run.stderr)


def test_run_quiet_keeps_the_start_up_line_and_nothing_else_below_warning(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """`--quiet` hid even the start-up line, the one line that says which stores and broker
    a sidecar uses."""
    args = ("-c", str(broker_conf(tmp_path)), "--metadata-store", store(tmp_path))
    with running(*args, "--broker-url", broker.service_url, "-q") as run:
        started(run)
        run.terminate()
    infos = [e["event"] for e in run.events() if e["level"] in ("debug", "info")]
    assert len(infos) == 1 and STARTING in infos[0], "".join(run.stderr)
    assert f"broker {broker.service_url}" in infos[0]


def test_run_refuses_verbose_and_quiet_together(tmp_path: Path) -> None:
    both = run_cli("run", "-v", "-q", "--metadata-store", store(tmp_path), cwd=tmp_path)
    assert both.returncode == 2 and both.stdout == ""
    assert both.stderr == "error: --verbose and --quiet contradict each other: choose one\n"


@pytest.mark.parametrize("command", list(LOGGING_COMMANDS))
def test_every_command_that_logs_takes_verbose_for_its_debug_lines(
    command: str, tmp_path: Path
) -> None:
    nowhere = f"pulsar://127.0.0.1:{free_port()}"
    args = [*LOGGING_COMMANDS[command], "-c", str(broker_conf(tmp_path))]
    if command == "cursor inspect":  # (kazoo waits half a minute for an absent ZooKeeper)
        args += ["--metadata-store", f"sqlite:{tmp_path / 'absent.db'}"]
    elif command != "config show":
        args += ["--metadata-store", f"zk:127.0.0.1:{free_port()}"]
    if command not in ("config show", "cursor inspect"):
        args += ["--broker-url", nowhere]
    quiet = run_cli(*args, cwd=tmp_path, timeout=120)
    verbose = run_cli(*args, "-v", cwd=tmp_path, timeout=120)
    assert IGNORED not in quiet.stderr, quiet.stderr
    assert '"level": "debug"' in verbose.stderr and IGNORED in verbose.stderr, verbose.stderr
    assert verbose.returncode == quiet.returncode, (quiet, verbose)


def help_options(*command: str) -> dict[str, str]:
    """`-x, --long` -> its help text, as `--help` prints them (folded lines joined)."""
    shown = run_cli(*command, "--help")
    assert shown.returncode == 0, shown.stderr
    found: dict[str, str] = {}
    option = None
    for line in shown.stdout.splitlines():
        match = re.match(r"^  (-\w, )?(--[a-z-]+)(?: [A-Z=.]+)?\s{2,}(.*)$", line)
        if match:
            option = (match[1] or "") + match[2]
            found[option] = match[3]
        elif option and re.match(r"^\s{8,}\S", line):
            found[option] += " " + line.strip()
        else:
            option = None
    return found


def test_the_flags_read_the_same_on_every_command() -> None:
    helps = {name: help_options(*name.split()) for name in [*LOGGING_COMMANDS, "run", "demo"]}
    verbose = {h["-v, --verbose"] for h in helps.values()}
    assert len(verbose) == 1 and "debug" in verbose.pop()
    assert "warnings and errors only" in helps["run"]["-q, --quiet"]
    assert "start-up line" in helps["run"]["-q, --quiet"]
