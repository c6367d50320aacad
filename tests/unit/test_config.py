"""ServiceConfiguration: its documented defaults, its sources in order, the properties file,
unknown keys, and overrides."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from config import (
    ServiceConfiguration,
    env_var,
    load_configuration,
)
from config.loader import snake_case
from config.settings import SPECS
from core.errors import ConfigurationError
from tests.unit.config_rig import (
    SEND_DELAY,
    SEND_DELAY_ENV,
    load_error,
    write,
)


def test_defaults_match_the_documented_values() -> None:
    loaded = load_configuration(None, {}, {})
    config = loaded.config
    assert config == ServiceConfiguration()
    assert config.two_phase_deletion_enabled is True
    assert config.ledger_deletion_parallelism_of_two_phase_deletion == 4
    assert config.ledger_deletion_worker_threads_of_two_phase_deletion == 4
    assert config.send_delay_seconds_of_two_phase_deletion == 60
    assert config.reconsume_later_seconds_of_two_phase_deletion == 600
    assert config.max_reconsume_times_of_two_phase_deletion == 10
    assert config.in_use_ledgers_cache_ttl_seconds == 600
    assert config.managed_ledger_max_unacked_ranges_to_persist == 10000
    assert config.persistent_unacked_ranges_with_multiple_entries_enabled is False
    assert config.persistent_unacked_ranges_max_entry_size == 1048576
    assert config.cursor_info_compression_type == "NONE"
    assert config.dispatcher_pause_on_ack_state_persistent_enabled is False
    assert config.acknowledgment_at_batch_index_level_enabled is False
    assert config.max_individual_ack_cache_bytes_per_cursor == 3145728
    assert config.enable_lru_cache_max_unacked_ranges is False
    assert config.managed_ledger_cursor_max_entries_per_ledger == 50000
    assert config.managed_ledger_cursor_rollover_time_in_seconds == 14400
    assert config.broker_service_url == "pulsar://127.0.0.1:6650"
    assert config.web_service_url == ""
    assert config.metadata_store_url == "sqlite:ledger-janitor.db"
    assert config.bookkeeper_metadata_service_uri == ""
    assert config.deletion_namespaces == ()
    assert config.auth_plugin == ""
    assert config.auth_params == ""
    assert config.operation_timeout_seconds == 30
    assert config.max_held_early_messages == 10000
    assert config.in_use_ledgers_source == "METADATA"
    assert config.tls_trust_certs_file_path == ""
    assert config.tls_allow_insecure_connection is False
    assert config.bookie_http_service_url == ""
    assert config.managed_ledger_offload_driver == ""
    assert config.s3_managed_ledger_offload_bucket == ""
    assert config.s3_managed_ledger_offload_region == ""
    assert config.s3_managed_ledger_offload_service_endpoint == ""
    assert config.file_system_uri == ""
    assert config.file_system_offload_storage_base_path == ""
    assert set(loaded.sources.values()) == {"default"}
    assert config.metrics_port == 9464
    assert config.metrics_bind_address == "127.0.0.1"
    assert config.clock_skew_allowance_seconds_of_two_phase_deletion == 10
    assert config.min_ledger_age_seconds_of_two_phase_deletion == 600
    assert config.ledger_deletion_schema_enabled_of_two_phase_deletion is True
    assert config.metadata_store_config_path == ""
    assert config.metadata_store_session_timeout_millis == 30000
    assert len(loaded.sources) == len(SPECS) == 44


def test_every_field_carries_key_type_default_and_doc() -> None:
    for f in dataclasses.fields(ServiceConfiguration):
        spec = f.metadata["spec"]
        # The attribute is the snake_case spelling of the Pulsar key, so neither can drift.
        assert f.name == snake_case(spec.key)
        assert spec.default == f.default
        assert spec.kind and spec.doc and "\n" not in spec.doc
    assert env_var(SEND_DELAY) == SEND_DELAY_ENV
    ttl_env = env_var("inUseLedgersCacheTtlSeconds")
    assert ttl_env == "LEDGER_JANITOR_IN_USE_LEDGERS_CACHE_TTL_SECONDS"
    assert len({env_var(spec.key) for spec in SPECS}) == len(SPECS)
    assert env_var("fileSystemURI") == "LEDGER_JANITOR_FILE_SYSTEM_URI"


def test_configuration_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ServiceConfiguration().operation_timeout_seconds = 5  # type: ignore[misc]


def test_later_sources_win_and_sources_are_recorded(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "# a comment\n! another comment\n"
        "sendDelaySecondsOfTwoPhaseDeletion=1\n"
        "reconsumeLaterSecondsOfTwoPhaseDeletion : 2\n"
        "operationTimeoutSeconds 3\n"
        "maxHeldEarlyMessages=4\n",
    )
    environ = {
        "LEDGER_JANITOR_RECONSUME_LATER_SECONDS_OF_TWO_PHASE_DELETION": "20",
        "LEDGER_JANITOR_OPERATION_TIMEOUT_SECONDS": "30",
        "LEDGER_JANITOR_MAX_HELD_EARLY_MESSAGES": "40",
        "LEDGER_JANITOR_CONFIG": "/ignored/by/the/loader",
        "PATH": "/usr/bin",
    }
    overrides = {"operationTimeoutSeconds": "300", "maxHeldEarlyMessages": "400"}
    loaded = load_configuration(path, environ, overrides)

    config = loaded.config
    assert config.send_delay_seconds_of_two_phase_deletion == 1
    assert config.reconsume_later_seconds_of_two_phase_deletion == 20
    assert config.operation_timeout_seconds == 300
    assert config.max_held_early_messages == 400
    assert loaded.source_of(SEND_DELAY) == f"file:{path}"
    assert loaded.source_of("reconsumeLaterSecondsOfTwoPhaseDeletion") == (
        "env:LEDGER_JANITOR_RECONSUME_LATER_SECONDS_OF_TWO_PHASE_DELETION"
    )
    assert loaded.source_of("operationTimeoutSeconds") == "cli"
    assert loaded.source_of("maxHeldEarlyMessages") == "cli"
    assert loaded.source_of("ledgerDeletionParallelismOfTwoPhaseDeletion") == "default"


def test_properties_file_continuations_and_lists(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "deletionNamespaces=public/default, \\\n    tenant-a/ns.1\n"
        "cursorInfoCompressionType=zstd\n"
        "metadataStoreUrl=zk:zk1:2181,zk2:2181/pulsar\n",
    )
    config = load_configuration(path, {}, {}).config
    assert config.deletion_namespaces == ("public/default", "tenant-a/ns.1")
    assert config.cursor_info_compression_type == "ZSTD"
    assert config.metadata_store_url == "zk:zk1:2181,zk2:2181/pulsar"


def test_unknown_key_in_file_names_key_source_and_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "sendDelaySecondOfTwoPhaseDeletion=5\n")
    message = load_error(path)
    assert (
        f"unknown key 'sendDelaySecondOfTwoPhaseDeletion' (from file:{path}); "
        f"did you mean '{SEND_DELAY}'?"
    ) in message


def test_unknown_key_in_environment_suggests_the_variable() -> None:
    message = load_error(environ={"LEDGER_JANITOR_SEND_DELAY_SECOND_OF_TWO_PHASE_DELETION": "5"})
    assert "unknown key 'LEDGER_JANITOR_SEND_DELAY_SECOND_OF_TWO_PHASE_DELETION'" in message
    assert "(from env:LEDGER_JANITOR_SEND_DELAY_SECOND_OF_TWO_PHASE_DELETION)" in message
    assert f"did you mean '{SEND_DELAY_ENV}'?" in message


def test_unknown_key_on_cli_suggests_even_for_snake_case_or_truncated_names() -> None:
    message = load_error(overrides={"send_delay_seconds_of_two_phase_deletion": "5"})
    assert "(from cli)" in message
    assert f"did you mean '{SEND_DELAY}'?" in message
    assert "did you mean 'maxHeldEarlyMessages'?" in load_error(overrides={"maxHeldEarly": "1"})


def test_unknown_key_with_nothing_similar_says_so() -> None:
    message = load_error(overrides={"brokerDeleteInactiveTopicsEnabled": "true"})
    assert "unknown key 'brokerDeleteInactiveTopicsEnabled' (from cli)" in message
    assert "no similar key exists" in message


def test_all_errors_of_one_load_are_reported_together_on_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "managedLedgerMaxUnackedRanges=5\noperationTimeoutSeconds=0\n")
    environ = {SEND_DELAY_ENV: "soon", "LEDGER_JANITOR_NOPE": "1"}
    message = load_error(path, environ, {"cursorInfoCompressionType": "bz2"})
    # The error contract: one line, each problem whole, separated by " | ".
    assert "\n" not in message
    head, _, rest = message.partition(": ")
    assert head == "5 configuration problems"
    problems = rest.split(" | ")
    assert len(problems) == 5
    # Grouped by source in precedence order: file, then environment, then CLI.
    assert "managedLedgerMaxUnackedRanges" in problems[0] and f"file:{path}" in problems[0]
    assert problems[1].startswith("operationTimeoutSeconds='0'")
    assert "LEDGER_JANITOR_NOPE" in problems[2]
    assert problems[3].startswith(f"{SEND_DELAY}='soon'")
    assert problems[4].startswith("cursorInfoCompressionType='bz2' (from cli)")


def test_bad_file_value_is_reported_even_if_overridden(tmp_path: Path) -> None:
    path = write(tmp_path, f"{SEND_DELAY}=soon\n")
    message = load_error(path, overrides={SEND_DELAY: "5"})
    assert f"{SEND_DELAY}='soon' (from file:{path})" in message


def test_missing_properties_file_names_the_path_and_other_errors_still_show(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "nowhere" / "janitor.properties"
    message = load_error(missing, {SEND_DELAY_ENV: "x"})
    assert f"properties file not found: {missing}" in message
    assert f"{SEND_DELAY}='x'" in message


def test_unreadable_properties_file_is_a_configuration_error(tmp_path: Path) -> None:
    assert f"cannot read properties file {tmp_path}" in load_error(tmp_path)
    bad_escape = write(tmp_path, "authPlugin=\\uZZZZ\n")
    assert "cannot read properties file" in load_error(bad_escape)


def test_with_overrides_validates_normalises_and_leaves_the_original() -> None:
    base = ServiceConfiguration()
    changed = base.with_overrides(
        send_delay_seconds_of_two_phase_deletion=0,
        cursor_info_compression_type="lz4",
        deletion_namespaces=["public/default"],
    )
    assert changed.send_delay_seconds_of_two_phase_deletion == 0
    assert changed.cursor_info_compression_type == "LZ4"
    assert changed.deletion_namespaces == ("public/default",)
    assert base.send_delay_seconds_of_two_phase_deletion == 60


@pytest.mark.parametrize(
    "changes",
    [
        {"operation_timeout_seconds": True},
        {"operation_timeout_seconds": 0},
        {"operation_timeout_seconds": 1.0},
        {"two_phase_deletion_enabled": 1},
        {"metadata_store_url": "mysql:x"},
    ],
)
def test_with_overrides_rejects_bad_values(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        ServiceConfiguration().with_overrides(**changes)


def test_with_overrides_rejects_unknown_names_with_a_suggestion() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'operation_timeout_seconds'"):
        ServiceConfiguration().with_overrides(operation_timeout_secs=5)
