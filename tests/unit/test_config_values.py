"""ServiceConfiguration's values: ints and their minimums, Java's booleans, enums, namespaces,
URLs and store URLs, and how secrets are shown."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from config import (
    LoadedConfiguration,
    ServiceConfiguration,
    StoreUrl,
    describe,
    load_configuration,
    parse_store_url,
)
from config.settings import SPECS
from core.errors import ConfigurationError
from tests.unit.config_rig import (
    SEND_DELAY,
    SEND_DELAY_ENV,
    load_error,
    write,
)


def test_bad_int_names_key_value_source_and_expectation() -> None:
    message = load_error(environ={SEND_DELAY_ENV: "abc"})
    assert (
        f"{SEND_DELAY}='abc' (from env:{SEND_DELAY_ENV}): expected an integer from 0 to 2147483647"
        in message
    )


@pytest.mark.parametrize("raw", ["1.5", "true", "", "1_000", "0x10", "٣"])
def test_ints_reject_non_integers(raw: str) -> None:
    message = load_error(overrides={"managedLedgerMaxUnackedRangesToPersist": raw})
    assert f"managedLedgerMaxUnackedRangesToPersist={raw!r} (from cli): expected an integer" in (
        message
    )


@pytest.mark.parametrize(
    ("key", "raw", "minimum"),
    [
        ("ledgerDeletionParallelismOfTwoPhaseDeletion", "0", 1),
        ("ledgerDeletionWorkerThreadsOfTwoPhaseDeletion", "0", 1),
        ("sendDelaySecondsOfTwoPhaseDeletion", "-1", 0),
        ("maxReconsumeTimesOfTwoPhaseDeletion", "0", 1),
        ("operationTimeoutSeconds", "0", 1),
        ("maxHeldEarlyMessages", "-5", 1),
    ],
)
def test_ints_below_their_minimum_are_rejected(key: str, raw: str, minimum: int) -> None:
    assert f"{key}={raw!r} (from cli): expected an integer from {minimum} to " in load_error(
        overrides={key: raw}
    )


def test_ints_at_their_minimum_and_with_whitespace_are_accepted() -> None:
    config = load_configuration(None, {}, {SEND_DELAY: " 0 ", "operationTimeoutSeconds": "+1"})
    assert config.config.send_delay_seconds_of_two_phase_deletion == 0
    assert config.config.operation_timeout_seconds == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        (" True ", True),
        ("false", False),
        ("OFF", False),
        # Java's Boolean.valueOf, as the broker reads the same file: only `true` is true.
        ("yes", False),
        ("1", False),
        ("on", False),
        ("maybe", False),
        ("", True),  # blank: the default stays, as Pulsar's FieldParser leaves it
    ],
)
def test_booleans_are_read_as_java_reads_them(raw: str, expected: bool) -> None:
    config = load_configuration(None, {}, {"twoPhaseDeletionEnabled": raw}).config
    assert config.two_phase_deletion_enabled is expected


def test_a_boolean_java_reads_as_false_by_surprise_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        load_configuration(None, {}, {"acknowledgmentAtBatchIndexLevelEnabled": "yes"})
        load_configuration(None, {}, {"acknowledgmentAtBatchIndexLevelEnabled": "FALSE"})
    assert [r.getMessage() for r in caplog.records] == [
        "acknowledgmentAtBatchIndexLevelEnabled='yes' (from cli): read as false, as Pulsar "
        "reads it: write true or false"
    ]


@pytest.mark.parametrize(
    "key",
    [
        "managedLedgerMaxUnackedRangesToPersist",
        "persistentUnackedRangesMaxEntrySize",
        "maxIndividualAckCacheBytesPerCursor",
        "managedLedgerCursorMaxEntriesPerLedger",
        "managedLedgerCursorRolloverTimeInSeconds",
    ],
)
def test_no_count_may_be_negative(key: str) -> None:
    assert f"{key}='-1' (from cli): expected an integer from " in load_error(overrides={key: "-1"})


def test_enum_is_case_insensitive_stored_upper_and_rejects_unknown() -> None:
    loaded = load_configuration(None, {}, {"cursorInfoCompressionType": "snappy"})
    assert loaded.config.cursor_info_compression_type == "SNAPPY"
    message = load_error(overrides={"cursorInfoCompressionType": "gzip"})
    assert "cursorInfoCompressionType='gzip' (from cli): expected one of NONE, LZ4, ZLIB" in message


@pytest.mark.parametrize("raw", ["public", "a/b/c", "/ns", "tenant/", "a/b,,c/d", "a b/c"])
def test_bad_namespaces_are_rejected(raw: str) -> None:
    message = load_error(overrides={"deletionNamespaces": raw})
    assert f"deletionNamespaces={raw!r} (from cli): expected a comma-separated list" in message


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("metadataStoreUrl", "etcd:h:2379"),
        ("metadataStoreUrl", ""),
        ("bookkeeperMetadataServiceUri", "zk+longhierarchical://h:2181/ledgers"),
        ("bookkeeperMetadataServiceUri", "zk+hierarchical://h:2181/bk"),
        ("brokerServiceUrl", "http://h:8080"),
        ("webServiceUrl", "pulsar://h:6650"),
    ],
)
def test_bad_urls_are_rejected(key: str, raw: str) -> None:
    assert f"{key}={raw!r} (from cli): expected" in load_error(overrides={key: raw})


def test_optional_urls_accept_empty_and_valid_values() -> None:
    overrides = {
        "bookkeeperMetadataServiceUri": "",
        "webServiceUrl": "https://h:8443",
        "brokerServiceUrl": "pulsar+ssl://h:6651",
    }
    config = load_configuration(None, {}, overrides).config
    assert (config.bookkeeper_metadata_service_uri, config.web_service_url) == (
        "",
        "https://h:8443",
    )
    assert config.broker_service_url == "pulsar+ssl://h:6651"


def test_describe_masks_secrets_and_formats_values(tmp_path: Path) -> None:
    path = write(tmp_path, "authParams=token:s3cret\nauthPlugin=org.example.Auth\n")
    loaded = load_configuration(path, {}, {"deletionNamespaces": "a/b,c/d"})
    rows = {key: (value, source, doc) for key, value, source, doc in describe(loaded)}
    assert [row[0] for row in describe(loaded)] == [spec.key for spec in SPECS]
    assert rows["authParams"][:2] == ("***", f"file:{path}")
    assert rows["authPlugin"][0] == "org.example.Auth"
    assert rows["deletionNamespaces"][:2] == ("a/b,c/d", "cli")
    assert rows["twoPhaseDeletionEnabled"][:2] == ("true", "default")
    assert rows[SEND_DELAY][2] == next(s.doc for s in SPECS if s.key == SEND_DELAY)
    assert all("s3cret" not in str(row) for row in describe(loaded))
    # Logging the configuration object must not leak the secret either.
    assert "s3cret" not in repr(loaded.config)


def test_describe_shows_an_empty_secret_as_empty() -> None:
    loaded = LoadedConfiguration(ServiceConfiguration(), {})
    rows = {key: value for key, value, _, _ in describe(loaded)}
    assert rows["authParams"] == ""


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("zk:127.0.0.1:2181", StoreUrl("zk", hosts="127.0.0.1:2181")),
        ("zk:127.0.0.1:2181,h2:2181", StoreUrl("zk", hosts="127.0.0.1:2181,h2:2181")),
        ("zk:h1:2181,h2:2182/x/y", StoreUrl("zk", hosts="h1:2181,h2:2182", chroot="/x/y")),
        ("zk:h1:2181/", StoreUrl("zk", hosts="h1:2181")),
        ("sqlite:ledger-janitor.db", StoreUrl("sqlite", path="ledger-janitor.db")),
        ("sqlite:/var/lib/janitor/state.db", StoreUrl("sqlite", path="/var/lib/janitor/state.db")),
        # The broker's spellings: BookKeeper's `metadata-store:` driver form (`;` between
        # hosts) and a bare ZooKeeper connect string.
        ("metadata-store:zk:h1:2181/pulsar", StoreUrl("zk", hosts="h1:2181", chroot="/pulsar")),
        ("metadata-store:zk:h1:2181;h2:2181", StoreUrl("zk", hosts="h1:2181,h2:2181")),
        ("metadata-store:etcd:http://e:2379", StoreUrl("etcd", endpoints=("http://e:2379",))),
        ("h1:2181,h2:2181", StoreUrl("zk", hosts="h1:2181,h2:2181")),
        ("h1:2181/pulsar", StoreUrl("zk", hosts="h1:2181", chroot="/pulsar")),
    ],
)
def test_parse_store_url(url: str, expected: StoreUrl) -> None:
    assert parse_store_url(url) == expected


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("etcd:h:2379", "scheme"),
        ("zK:h:2181", "scheme"),
        ("rocksdb://data", "scheme"),
        ("metadata-store:mysql:x", "scheme"),
        ("", "scheme"),
        ("zk://h:2181", "not zk://"),
        ("zk:", "no ZooKeeper host"),
        ("zk:h", "not host:port"),
        ("zk:h:99999", "valid port"),
        ("zk:h:2181,:2181", "not host:port"),
        ("zk:h:2181/x/", "empty path segment"),
        ("sqlite:", "no sqlite database path"),
        ("sqlite:///var/x.db", "not sqlite://"),
    ],
)
def test_parse_store_url_rejects(url: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(reason)) as info:
        parse_store_url(url)
    assert repr(url) in str(info.value)
