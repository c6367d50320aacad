"""The broker's own broker.conf as our properties file (issue 26, defect 11): its keys are
ignored, its spellings of the store URL accepted, and our own keys still strictly checked."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from config import load_configuration
from tests.unit.config_rig import load_error, write

# Lines as a stock broker.conf has them: most keys blank, some of ours among the broker's.
BROKER_LINES = """\
clusterName=standalone
metadataStoreUrl=
configurationMetadataStoreUrl=zk:other:2181/global
zookeeperServers=
brokerServicePort=6650
managedLedgerMaxUnackedRangesToPersistInMetadataStore=1000
managedLedgerCursorMaxEntriesPerLedger=50000
bookkeeperMetadataServiceUri=
tlsTrustCertsFilePath=
"""


def test_broker_keys_are_ignored_and_listed_once_at_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, BROKER_LINES)
    with caplog.at_level(logging.DEBUG, logger="config.loader"):
        loaded = load_configuration(path, {}, {})
    assert loaded.config.managed_ledger_cursor_max_entries_per_ledger == 50000
    # Blank means "not set", as the broker reads it: the default stays, and says so.
    assert loaded.config.metadata_store_url == "sqlite:ledger-janitor.db"
    assert loaded.source_of("metadataStoreUrl") == "default"
    ignored = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert len(ignored) == 1
    assert "clusterName" in ignored[0] and "configurationMetadataStoreUrl" in ignored[0]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "metadataStoreUrl=metadata-store:zk:zk1:2181,zk2:2181/pulsar",
            "zk:zk1:2181,zk2:2181/pulsar",
        ),
        ("metadataStoreUrl=zk1:2181,zk2:2181/pulsar", "zk:zk1:2181,zk2:2181/pulsar"),
        ("metadataStoreUrl=zk:zk1:2181/", "zk:zk1:2181"),
        ("metadataStoreUrl=metadata-store:etcd:http://e1:2379", "etcd:http://e1:2379"),
        ("zookeeperServers=zk1:2181,zk2:2181", "zk:zk1:2181,zk2:2181"),
    ],
)
def test_the_brokers_spellings_of_the_store_are_read(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = write(tmp_path, BROKER_LINES + line + "\n")
    assert load_configuration(path, {}, {}).config.metadata_store_url == expected


def test_zookeeper_servers_is_only_the_fallback_and_its_source_says_so(tmp_path: Path) -> None:
    both = write(tmp_path, "zookeeperServers=old:2181\nmetadataStoreUrl=zk:new:2181\n")
    assert load_configuration(both, {}, {}).config.metadata_store_url == "zk:new:2181"
    alone = write(tmp_path, "zookeeperServers=old:2181\n")
    loaded = load_configuration(alone, {}, {})
    assert loaded.source_of("metadataStoreUrl") == f"file:{alone}, zookeeperServers"
    bad = write(tmp_path, "zookeeperServers=old\n")
    assert "zookeeperServers): expected zk:" in load_error(bad)


def test_a_typo_of_our_key_in_a_broker_file_still_fails_with_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, BROKER_LINES + "sendDelaySecondOfTwoPhaseDeletion=5\n")
    message = load_error(path)
    assert "unknown key 'sendDelaySecondOfTwoPhaseDeletion'" in message
    assert "did you mean 'sendDelaySecondsOfTwoPhaseDeletion'?" in message
    assert "\n" not in message


def test_broker_keys_are_refused_where_a_broker_never_reads_them() -> None:
    # The environment and --set are ours alone: there, every unknown key is an error.
    assert "unknown key 'clusterName' (from cli)" in load_error(overrides={"clusterName": "x"})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # BookKeeper's own URI, as broker.conf documents it: the path is the ledgers root.
        ("zk+hierarchical://zk1:2181;zk2:2181/ledgers", "zk:zk1:2181,zk2:2181"),
        ("zk://zk1:2181/pulsar/ledgers", "zk:zk1:2181/pulsar"),
        ("metadata-store:zk:zk1:2181/pulsar", "zk:zk1:2181/pulsar"),
    ],
)
def test_the_brokers_bookkeeper_metadata_service_uri_is_read(
    tmp_path: Path, raw: str, expected: str
) -> None:
    path = write(tmp_path, f"bookkeeperMetadataServiceUri={raw}\n")
    config = load_configuration(path, {}, {}).config
    assert config.bookkeeper_metadata_service_uri == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        # Another layout puts ledgers at paths we would not read.
        ("zk+longhierarchical://zk1:2181/ledgers", "only the hierarchical one"),
        ("zk+hierarchical://zk1:2181/bk", "only <chroot>/ledgers"),
    ],
)
def test_a_bookkeeper_uri_we_cannot_read_is_refused(raw: str, reason: str) -> None:
    assert reason in load_error(overrides={"bookkeeperMetadataServiceUri": raw})


def test_other_programs_keys_are_not_taken_for_typos(tmp_path: Path) -> None:
    # A standalone's file also configures its bookie; none of these is a slip for one of ours.
    lines = "httpServerEnabled=true\nlogSizeLimit=2097152\nmetadataServiceUri=zk://h:2181\n"
    assert load_configuration(write(tmp_path, lines), {}, {}).sources == {
        **load_configuration(None, {}, {}).sources
    }


@pytest.mark.parametrize(
    ("typo", "ours"),
    [
        ("metricsPrt", "metricsPort"),
        ("maxHeldEarly", "maxHeldEarlyMessages"),
        ("tlsTrustCertsFile", "tlsTrustCertsFilePath"),
        ("webserviceurl", "webServiceUrl"),
    ],
)
def test_slips_of_the_keyboard_in_a_file_are_typos(tmp_path: Path, typo: str, ours: str) -> None:
    assert f"did you mean {ours!r}?" in load_error(write(tmp_path, f"{typo}=1\n"))
