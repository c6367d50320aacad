"""A cursor ledger as `cursor inspect` shows it: its metadata, and its state where readable.

BookKeeper's ledger metadata (ensemble, quorums, state, last entry, length, custom metadata)
is a znode in the ledger store, read here as BookKeeper writes it. The entries are another
matter: on a real cluster they live on the bookies, which serve them only through
BookKeeper's own client protocol (a bookie's HTTP `/api/v1/ledger/read` returns entries as
US-ASCII text, every byte above 0x7F replaced, so binary cursor state cannot come through
it). Only the embedded SQLite ledger store holds entries this process can read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.errors import DecodeError
from cursor.persistence.ledger_port import CursorLedgers, last_entry_id
from cursor.persistence.recovery import recover
from cursor.persistence.settings import CursorSettings
from deletion.adapters.layout import require_ledgers_layout
from deletion.adapters.opening import StoreSpec, open_embedded_ledgers, open_store
from deletion.domain.ports import Node
from deletion.wire import bookkeeper_metadata as formats
from deletion.wire.proto.bookkeeper_formats_pb2 import LedgerMetadataFormat

Json = dict[str, Any]

ON_BOOKIES = (
    "entries not readable here: the ledger store is BookKeeper's ({scheme}), which holds only "
    "ledger metadata; the entries are on the bookies, readable through BookKeeper's client "
    "protocol alone (a bookie's HTTP API returns them as ASCII text, losing bytes above "
    "0x7F); the broker's view of this cursor: pulsar-admin topics stats-internal {topic}"
)
NOT_IN_STORE = (
    "ledger {ledger} is not in the ledger store {store}: deleted, or another store (--ledger-store)"
)


def cursor_ledger(spec: StoreSpec, ledger_id: int, topic: str, settings: CursorSettings) -> Json:
    """`ledger` (id, metadata, and where the state was found) and `state` (None when it
    could not be read, `ledger.why` saying why in one line)."""
    scheme = spec.url.scheme
    if not spec.embedded:
        store = open_store(spec)
        try:
            node = store.get(formats.ledger_path(ledger_id))
            if node is None:  # "not in the store" only from BookKeeper's own store
                require_ledgers_layout(store, spec.where)
        finally:
            store.close()
        ledger: Json = {"ledgerId": ledger_id, "readable": False}
        if node is None:
            ledger["metadata"] = None
            ledger["why"] = NOT_IN_STORE.format(ledger=ledger_id, store=scheme)
        else:
            ledger["metadata"] = bookkeeper_metadata(node)
            ledger["why"] = ON_BOOKIES.format(scheme=scheme, topic=topic)
        return {"ledger": ledger, "state": None}
    embedded = open_embedded_ledgers(spec)
    assert embedded is not None
    try:
        record = embedded.ledger(ledger_id)
        if record is None:
            why = NOT_IN_STORE.format(ledger=ledger_id, store=spec.url.path)
            return {"ledger": {"ledgerId": ledger_id, "metadata": None, "why": why}, "state": None}
        metadata = {"ctime": record.ctime_ms, "customMetadata": _text(record.custom_metadata)}
        return _with_state(embedded, ledger_id, metadata, settings)
    finally:
        embedded.close()


def bookkeeper_metadata(node: Node) -> Json:
    try:
        found = formats.decode(node.data)
    except DecodeError as exc:
        return {"undecodable": str(exc)}
    closed = found.state == LedgerMetadataFormat.CLOSED
    return {
        "state": LedgerMetadataFormat.State.Name(found.state),
        "ensembleSize": found.ensembleSize,
        "writeQuorumSize": found.quorumSize,
        "ackQuorumSize": found.ackQuorumSize if found.HasField("ackQuorumSize") else None,
        # Only a closed ledger's metadata records its end; an open one's the writer knows.
        "lastEntryId": found.lastEntryId if closed and found.HasField("lastEntryId") else None,
        "length": found.length if closed else None,
        "digestType": (
            LedgerMetadataFormat.DigestType.Name(found.digestType)
            if found.HasField("digestType")
            else None
        ),
        "ensembles": [
            {"firstEntryId": s.firstEntryId, "bookies": list(s.ensembleMember)}
            for s in found.segment
        ],
        "ctime": found.ctime if found.HasField("ctime") else node.stat.ctime_ms,
        "customMetadata": _text(formats.custom_metadata(found)),
    }


def _text(metadata: Mapping[str, bytes]) -> dict[str, str]:
    return {key: value.decode("utf-8", "replace") for key, value in metadata.items()}


def _with_state(
    ledgers: CursorLedgers, ledger_id: int, metadata: Json, settings: CursorSettings
) -> Json:
    last = last_entry_id(ledgers, ledger_id)
    ledger: Json = {"ledgerId": ledger_id, "metadata": metadata, "readable": True}
    ledger["lastEntryId"] = last
    if last < 0:
        ledger["why"] = "the ledger has no entries: no state was ever written to it"
        return {"ledger": ledger, "state": None}
    # Everything in memory: an inspection wants the full picture, not the LRU's slice of it.
    plain = CursorSettings(
        max_entry_size=settings.max_entry_size, batch_index_level=settings.batch_index_level
    )
    try:
        recovered = recover(ledgers, ledger_id, plain)
    except DecodeError as exc:
        ledger["why"] = f"no complete state in its {last + 1} entries: {exc}"
        return {"ledger": ledger, "state": None}
    state = recovered.state
    ledger.update(
        stateEntryId=recovered.entry_id,
        entriesAfterState=recovered.skipped,
        layout="per-ledger (PIP-81)" if recovered.index else "single state",
        indexedLedgers=len(recovered.index),
    )
    return {
        "ledger": ledger,
        "state": {
            "markDelete": str(state.mark_delete),
            "rangeCount": state.range_count,
            "ledgers": len(state.ledger_ids()),
            "batches": len(state.batch_indexes()),
            "properties": state.properties,
        },
    }
