"""What `cursor inspect` reports about a live cursor, read-only.

Always the cursor's znode (ManagedCursorInfo: its ledger, mark-delete position, properties,
any ranges kept inline, last active); then the cursor ledger's metadata from the ledger
store, and the state in it when this process can read the entries (ledger_view.py says
when, and why not otherwise); then whether the persisted state reached the cap.
"""

from __future__ import annotations

from typing import Any

from config import ServiceConfiguration
from cursor.durable.json_form import cursor_info_json
from cursor.durable.ledger_view import cursor_ledger
from cursor.durable.metadata import CursorMetadata
from cursor.errors import CursorNotFoundError
from cursor.persistence.settings import CursorSettings
from deletion.adapters.opening import StoreSpec, open_metadata_store
from deletion.domain.topics import TopicName


def inspect_cursor(
    config: ServiceConfiguration, topic_name: str, cursor: str, ledgers_url: str | None
) -> dict[str, Any]:
    topic = TopicName.parse(topic_name)
    settings = CursorSettings.from_config(config)
    store = open_metadata_store(StoreSpec.metadata(config))
    try:
        metadata = CursorMetadata(store, topic, cursor, settings.compression)
        found = metadata.read()
    finally:
        store.close()
    if found is None:
        raise CursorNotFoundError(f"no cursor {cursor!r} on {topic}")
    info, version = found
    znode = cursor_info_json(info)
    report: dict[str, Any] = {"cursor": cursor, "topic": str(topic), "version": version}
    report["path"] = metadata.path
    report["znode"] = znode
    if info.cursors_ledger_id < 0:
        report["ledger"], report["state"] = None, None
    else:
        spec = StoreSpec.ledgers(config, ledgers_url)
        report.update(cursor_ledger(spec, info.cursors_ledger_id, str(topic), settings))
    # What was persisted is at most the cap; reaching it means acks were likely cut, and
    # with PIP-299 on, the broker pauses dispatch until acks bring it back.
    state, ledger = report["state"], report["ledger"]
    cap = settings.max_unacked_ranges_to_persist
    count: int | None = None
    of: str | None = None
    if state is not None:
        count, of = state["rangeCount"], "ledger state"
    elif ledger is None or ledger.get("readable"):
        count, of = znode["rangeCount"], "znode"  # no ledger, or one with no state in it
    # Else the state of record is in a ledger not read here: the cap is not known.
    report["cap"] = {
        "of": of,
        "rangeCount": count,
        "maxUnackedRangesToPersist": cap,
        "atCap": None if count is None else count >= cap,
        "pauseOnAckStatePersistentEnabled": settings.pause_on_ack_state_persistent,
    }
    return report
