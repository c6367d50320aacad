"""The cursor keys of the service configuration, and the combinations refused."""

from __future__ import annotations

import pytest

from config import ServiceConfiguration
from core.errors import ConfigurationError
from cursor import CursorSettings
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType


def test_settings_come_from_the_pulsar_keys() -> None:
    config = ServiceConfiguration().with_overrides(
        managed_ledger_max_unacked_ranges_to_persist=7,
        persistent_unacked_ranges_with_multiple_entries_enabled=True,
        persistent_unacked_ranges_max_entry_size=4096,
        cursor_info_compression_type="ZSTD",
        dispatcher_pause_on_ack_state_persistent_enabled=True,
        acknowledgment_at_batch_index_level_enabled=True,
        max_individual_ack_cache_bytes_per_cursor=1000,
        enable_lru_cache_max_unacked_ranges=True,
        managed_ledger_cursor_max_entries_per_ledger=9,
        managed_ledger_cursor_rollover_time_in_seconds=60,
    )
    settings = CursorSettings.from_config(config)
    assert settings == CursorSettings(
        max_unacked_ranges_to_persist=7,
        multiple_entries=True,
        max_entry_size=4096,
        compression=CompressionType.ZSTD,
        pause_on_ack_state_persistent=True,
        batch_index_level=True,
        max_ack_cache_bytes=1000,
        lru_cache=True,
        max_entries_per_ledger=9,
        rollover_seconds=60,
    )
    assert CursorSettings.from_config(ServiceConfiguration()) == CursorSettings()


def test_the_lru_needs_per_ledger_entries() -> None:
    with pytest.raises(ConfigurationError, match="persistentUnackedRangesWithMultipleEntries"):
        CursorSettings(lru_cache=True)
