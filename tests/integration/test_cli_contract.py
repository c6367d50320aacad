"""The command line's promises, checked as a person meets them (issue 26, defects 2, 11, 12, 16).

Real processes: the broker's own broker.conf from the Apache Pulsar distribution is read as
the configuration file; every failure is one `error:` line on stderr with exit code 2; `-h`
is help on every command and no help page shows typer's type labels.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import javaproperties
import pytest
import typer
from typer.testing import CliRunner

from config.broker_keys import BROKER_KEYS
from config.settings import SPECS
from harness.process import run_cli
from harness.pulsar_dist import CACHE, PULSAR_VERSION, distribution
from ledger_janitor import install_hint
from ledger_janitor.cli import app


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.fixture(scope="module")
def broker_conf() -> Path:
    """The stock `conf/broker.conf` of the Pulsar distribution the real-broker tests run."""
    cached = CACHE / f"pulsar-{PULSAR_VERSION}" / f"apache-pulsar-{PULSAR_VERSION}"
    if not (cached / "conf").exists() and shutil.which("mvn") is None:
        pytest.skip("the Pulsar distribution is not cached and Maven is missing to fetch it")
    return distribution().home / "conf" / "broker.conf"


def edited(source: Path, target: Path, key: str, value: str) -> Path:
    """The file with one `key=` line set, as an operator edits it."""
    lines = source.read_text(encoding="utf-8").splitlines()
    assert f"{key}=" in lines, f"{source} has no blank {key}= line"
    target.write_text(
        "\n".join(f"{key}={value}" if line == f"{key}=" else line for line in lines) + "\n",
        encoding="utf-8",
    )
    return target


def shown(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    assert result.returncode == 0, result.stderr
    return {row["key"]: row for row in json.loads(result.stdout)}


@pytest.mark.parametrize("name", ["broker.conf", "standalone.conf"])
def test_every_key_of_the_real_broker_files_is_ours_or_the_brokers(
    broker_conf: Path, name: str
) -> None:
    with (broker_conf.parent / name).open(encoding="utf-8") as fp:
        keys = set(javaproperties.load(fp))
    assert keys - {spec.key for spec in SPECS} - BROKER_KEYS == set()


def test_the_test_brokers_standalone_conf_is_read() -> None:
    """The suite's own standalone.conf also sets bookie keys: they are not typos of ours."""
    conf = Path(__file__).resolve().parents[2] / "harness" / "pulsar" / "standalone.conf"
    assert cli("config", "show", "-c", str(conf)).returncode == 0


def test_config_show_reads_the_stock_broker_conf(broker_conf: Path) -> None:
    rows = shown(cli("config", "show", "--json", "-c", str(broker_conf)))
    # Its keys of ours hold the broker's values; its blank metadataStoreUrl leaves ours alone.
    assert rows["managedLedgerCursorMaxEntriesPerLedger"]["source"] == f"file:{broker_conf}"
    assert rows["metadataStoreUrl"]["source"] == "default"


@pytest.mark.parametrize(
    ("key", "value", "store"),
    [
        ("metadataStoreUrl", "metadata-store:zk:zk1:2181;zk2:2181/pulsar", "zk:zk1:2181,zk2:2181/pulsar"),  # noqa: E501
        ("metadataStoreUrl", "zk:zk1:2181/pulsar", "zk:zk1:2181/pulsar"),
        ("metadataStoreUrl", "zk1:2181,zk2:2181", "zk:zk1:2181,zk2:2181"),
        ("zookeeperServers", "zk1:2181,zk2:2181", "zk:zk1:2181,zk2:2181"),
    ],
)  # fmt: skip
def test_config_show_takes_the_store_from_the_broker_conf(
    broker_conf: Path, tmp_path: Path, key: str, value: str, store: str
) -> None:
    conf = edited(broker_conf, tmp_path / "broker.conf", key, value)
    rows = shown(cli("config", "show", "--json", "-c", str(conf)))
    assert rows["metadataStoreUrl"]["value"] == store
    assert rows["metadataStoreUrl"]["source"].startswith(f"file:{conf}")


def test_a_typo_of_ours_in_the_broker_conf_fails_on_one_line(
    broker_conf: Path, tmp_path: Path
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf.read_text() + "\nmetricsPrt=9000\n")
    result = cli("config", "show", "-c", str(conf))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: unknown key 'metricsPrt' (from file:{conf}); did you mean 'metricsPort'?"
    ]


MISSING = "/nonexistent/broker.conf"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("config", "show", "--set", "bogusKey=1"), "unknown key 'bogusKey'"),
        (("run", "--set", "sendDelaySecondsOfTwoPhaseDeleton=5"),
         "did you mean 'sendDelaySecondsOfTwoPhaseDeletion'?"),
        (("config", "show", "--set", "reconsumeLaterSecondsOfTwoPhaseDeletion=soon"), "'soon'"),
        (("config", "show", "--set", "metricsPort=70000"), "from 0 to 65535"),
        (("run", "--set", "metricsPort=70000"), "from 0 to 65535"),
        (("config", "show", "--set", "metricsBindAddress=999.1.1.1"), "a host name that resolves"),
        (("run", "--set", "metricsBindAddress=999.1.1.1"), "a host name that resolves"),
        (("config", "show", "--set", "x=1", "--set", "metricsPort=-1"), "2 configuration problems"),
        (("config", "show", "-c", MISSING), f"properties file not found: {MISSING}"),
        (("run", "-c", MISSING), f"properties file not found: {MISSING}"),
        (("enqueue", "public/default/t", "1", "-c", MISSING), "properties file not found"),
        (("archive", "list", "-c", MISSING), "properties file not found"),
        (("audit", "-c", MISSING), "properties file not found"),
        (("config", "show", "--bogus"), "No such option: --bogus"),
        (("run", "--bogus"), "No such option: --bogus"),
        (("archive", "drain", "--bogus"), "No such option: --bogus"),
        (("cursor", "decode", "--bogus"), "No such option: --bogus"),
        (("enqueue",), "Missing argument"),
        (("enqueue", "public/default/t", "one"), "LEDGER_ID"),
        (("enqueue", "public/default/t", "1", "--kind", "COMPACTED_LEDGER", "--component",
          "MANAGED_LEDGER"), "--kind COMPACTED_LEDGER is sent as MANAGED_LEDGER: drop --component"),
        (("enqueue", "public/default/t", "1", "--kind", "SOMETHING"), "Invalid value for '--kind'"),
        (("config", "show", "--set", "novalue"), "is not KEY=VALUE"),
        (("nosuchcommand",), "No such command"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else "",
)  # fmt: skip
def test_every_error_is_one_error_line_and_exit_2(args: tuple[str, ...], expected: str) -> None:
    result = cli(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stdout + result.stderr


def command_paths() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []

    def walk(command: object, prefix: tuple[str, ...]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            paths.append((*prefix, name))
            walk(sub, (*prefix, name))

    walk(typer.main.get_command(app), ())
    return paths


# typer's type labels, unreadable to an operator: <list[int]>, <float range>, {topic}, <str>.
TYPE_LABEL = re.compile(r"<[\w\[\], ]+>|\{\w+\}")


@pytest.mark.parametrize("path", [(), *command_paths()], ids=lambda p: " ".join(p) or "(top)")
def test_dash_h_is_help_and_help_reads_as_words(path: tuple[str, ...]) -> None:
    runner = CliRunner()
    short = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "100"})
    long = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert short.exit_code == 0, short.output
    assert short.stdout == long.stdout
    assert "-h, --help" in short.stdout
    assert TYPE_LABEL.findall(short.stdout) == []


def test_the_enqueue_usage_names_its_arguments() -> None:
    usage = CliRunner().invoke(app, ["enqueue", "-h"]).stdout.splitlines()[0]
    assert usage.endswith("enqueue [OPTIONS] TOPIC LEDGER_ID...")


def test_the_install_hint_names_the_extras_requirements() -> None:
    """One command that works from a clone and beside a wheel: the extra's own requirements."""
    hint = install_hint("audit")
    assert re.fullmatch(r"pip install 'pyspark>=[\d.]+' 'jinja2>=[\d.]+'", hint), hint
    assert install_hint("embedded").startswith("pip install 'pulsar-lite")
