"""A full state too large for one entry, written without ever being held whole.

A state in the MessageRange form that is certainly chunked (every record takes at least 14
bytes, so the range count alone tells) is encoded from the bitmaps a ledger's runs at a
time (range_runs.py), never as columns of every range. Uncompressed, the bytes are cut into
entries as they come: memory stays at a ledger's runs and a chunk, whatever the state's
size. Compressed, the payload is joined once and compressed whole, as Pulsar does. The
entries are exactly those of `encode_state` and `chunking.write` (the split layout, as any
chunked state has), which tests hold it to. Recovery reads any chunked state a chunk at a
time (recovery.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from cursor.ack import I64, AckState, BitmapStore
from cursor.persistence import chunking
from cursor.persistence.capture import PersistReport, capped_batches
from cursor.persistence.ledger_port import CursorLedgers
from cursor.persistence.settings import CursorSettings
from cursor.wire import PositionInfoContent, RangeEncoding, compress, split_position_info_pieces
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType

MIN_RECORD_BYTES = 14  # a MessageRange record is 14 varints


def streams(state: AckState, settings: CursorSettings) -> bool:
    persisted = min(state.range_count, settings.max_unacked_ranges_to_persist)
    return (
        settings.range_encoding is RangeEncoding.MESSAGE_RANGE
        and persisted * MIN_RECORD_BYTES >= settings.max_entry_size
    )


def write_streamed(
    ledgers: CursorLedgers, ledger_id: int, state: AckState, settings: CursorSettings
) -> tuple[PersistReport, chunking.Written]:
    batches, batches_total = capped_batches(state, settings.max_batches_to_persist)
    content = PositionInfoContent(
        mark_delete=state.mark_delete, batch_indexes=batches, properties=dict(state.properties)
    )
    counted = [0]
    runs = _ledger_runs(
        state.bitmaps, state.ledger_ids(), settings.max_unacked_ranges_to_persist, counted
    )
    pieces = split_position_info_pieces(content, runs)
    if settings.compression == CompressionType.NONE:
        written = chunking.write_pieces(ledgers, ledger_id, pieces, settings.max_entry_size)
    else:
        payload = compress(b"".join(pieces), settings.compression)
        written = chunking.write(ledgers, ledger_id, payload, settings.max_entry_size)
    report = PersistReport(
        encoding=RangeEncoding.MESSAGE_RANGE,
        ranges_total=state.range_count,
        ranges_persisted=counted[0],
        batches_total=batches_total,
        batches_persisted=len(batches),
        payload_bytes=written.payload_bytes,
        entries_written=written.entries,
    )
    return report, written


def _ledger_runs(
    bitmaps: BitmapStore, ledger_ids: list[int], cap: int, counted: list[int]
) -> Iterator[tuple[int, I64, I64]]:
    """The first `cap` runs in position order, a ledger at a time."""
    for ledger_id in ledger_ids:
        if counted[0] >= cap:
            break
        bitmap = bitmaps.get(ledger_id)
        if bitmap is None:
            continue
        firsts, lasts = bitmap.runs_array()
        take = min(firsts.size, cap - counted[0])
        counted[0] += take
        yield ledger_id, firsts[:take], lasts[:take]
