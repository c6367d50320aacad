"""What `cursor inspect` reports about a live cursor, read-only."""

from __future__ import annotations

from typing import Any

from config import ServiceConfiguration
from cursor.durable.json_form import cursor_info_json
from cursor.durable.metadata import CursorMetadata
from cursor.errors import CursorNotFoundError
from cursor.persistence.ledger_port import CursorLedgers, last_entry_id
from cursor.persistence.recovery import recover
from cursor.persistence.settings import CursorSettings
from deletion.adapters.opening import StoreSpec, open_embedded_ledgers, open_metadata_store
from deletion.domain.topics import TopicName


def inspect_cursor(
    config: ServiceConfiguration, topic_name: str, cursor: str, ledgers_url: str | None
) -> dict[str, Any]:
    topic = TopicName.parse(topic_name)
    settings = CursorSettings.from_config(config)
    store = open_metadata_store(StoreSpec.metadata(config), create=False)
    try:
        found = CursorMetadata(store, topic, cursor, settings.compression).read()
    finally:
        store.close()
    if found is None:
        raise CursorNotFoundError(f"no cursor {cursor!r} on {topic}")
    info, version = found
    report: dict[str, Any] = {"cursor": cursor, "topic": str(topic), "version": version}
    report["znode"] = cursor_info_json(info)
    ledger_store = StoreSpec.ledgers(config, ledgers_url)
    if info.cursors_ledger_id < 0:
        report["ledger"] = None
        return report
    ledgers = open_embedded_ledgers(ledger_store)
    if ledgers is None:
        report["ledger"] = {"ledgerId": info.cursors_ledger_id, "readable": False}
    else:
        try:
            report.update(_ledger_report(ledgers, info.cursors_ledger_id, settings))
        finally:
            ledgers.close()
    return report


def _ledger_report(
    ledgers: CursorLedgers, ledger_id: int, settings: CursorSettings
) -> dict[str, Any]:
    # Everything in memory: an inspection wants the full picture, not the LRU's slice of it.
    plain = CursorSettings(
        max_entry_size=settings.max_entry_size, batch_index_level=settings.batch_index_level
    )
    recovered = recover(ledgers, ledger_id, plain)
    state = recovered.state
    count, cap = state.range_count, settings.max_unacked_ranges_to_persist
    return {
        "ledger": {
            "ledgerId": ledger_id,
            "lastEntryId": last_entry_id(ledgers, ledger_id),
            "stateEntryId": recovered.entry_id,
            "entriesAfterState": recovered.skipped,
            "layout": "per-ledger (PIP-81)" if recovered.index else "single state",
            "indexedLedgers": len(recovered.index),
        },
        "state": {
            "markDelete": str(state.mark_delete),
            "rangeCount": count,
            "ledgers": len(state.ledger_ids()),
            "batches": len(state.batch_indexes()),
            "properties": state.properties,
        },
        # What was persisted is at most the cap; reaching it means acks were likely cut,
        # and with PIP-299 on, the broker pauses dispatch until acks bring it back.
        "cap": {
            "maxUnackedRangesToPersist": cap,
            "atCap": count >= cap,
            "pauseOnAckStatePersistentEnabled": settings.pause_on_ack_state_persistent,
        },
    }
