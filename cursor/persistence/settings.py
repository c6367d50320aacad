"""The cursor-state settings, taken from the service configuration's Pulsar keys."""

from __future__ import annotations

from dataclasses import dataclass

from config import ServiceConfiguration
from core.errors import ConfigurationError
from cursor.persistence.capture import MAX_BATCH_DELETED_INDEX_TO_PERSIST
from cursor.wire import RangeEncoding, compression_type
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType


@dataclass(frozen=True)
class CursorSettings:
    # managedLedgerMaxUnackedRangesToPersist
    max_unacked_ranges_to_persist: int = 10_000
    # persistentUnackedRangesWithMultipleEntriesEnabled: PIP-81 per-ledger entries + marker
    multiple_entries: bool = False
    # persistentUnackedRangesMaxEntrySize: PIP-381 chunk size (and the single-entry limit)
    max_entry_size: int = 1_048_576
    # cursorInfoCompressionType
    compression: CompressionType.ValueType = CompressionType.NONE
    # dispatcherPauseOnAckStatePersistentEnabled (PIP-299)
    pause_on_ack_state_persistent: bool = False
    # acknowledgmentAtBatchIndexLevelEnabled (PIP-54)
    batch_index_level: bool = False
    # maxIndividualAckCacheBytesPerCursor and enableLruCacheMaxUnackedRanges (PIP-81)
    max_ack_cache_bytes: int = 3_145_728
    lru_cache: bool = False
    # managedLedgerCursorMaxEntriesPerLedger and managedLedgerCursorRolloverTimeInSeconds
    max_entries_per_ledger: int = 50_000
    rollover_seconds: float = 14_400
    # Pulsar's managedLedgerPersistIndividualAckAsLongArray (true by default there)
    range_encoding: RangeEncoding = RangeEncoding.LONG_LIST_MAP
    max_batches_to_persist: int = MAX_BATCH_DELETED_INDEX_TO_PERSIST

    def __post_init__(self) -> None:
        if self.max_entry_size < 1:
            raise ConfigurationError("persistentUnackedRangesMaxEntrySize must be positive")
        if self.lru_cache and not self.multiple_entries:
            raise ConfigurationError(
                "enableLruCacheMaxUnackedRanges needs "
                "persistentUnackedRangesWithMultipleEntriesEnabled: only per-ledger entries "
                "can be swapped in and out"
            )

    @classmethod
    def from_config(cls, config: ServiceConfiguration) -> CursorSettings:
        return cls(
            max_unacked_ranges_to_persist=config.managed_ledger_max_unacked_ranges_to_persist,
            multiple_entries=config.persistent_unacked_ranges_with_multiple_entries_enabled,
            max_entry_size=config.persistent_unacked_ranges_max_entry_size,
            compression=compression_type(config.cursor_info_compression_type),
            pause_on_ack_state_persistent=config.dispatcher_pause_on_ack_state_persistent_enabled,
            batch_index_level=config.acknowledgment_at_batch_index_level_enabled,
            max_ack_cache_bytes=config.max_individual_ack_cache_bytes_per_cursor,
            lru_cache=config.enable_lru_cache_max_unacked_ranges,
            max_entries_per_ledger=config.managed_ledger_cursor_max_entries_per_ledger,
            rollover_seconds=config.managed_ledger_cursor_rollover_time_in_seconds,
        )
