"""managedLedgerMaxUnackedRangesToPersist and friends, applied as Pulsar applies them."""

from __future__ import annotations

import numpy as np

from cursor import (
    AckState,
    LedgerLayout,
    Position,
    PositionInfoContent,
    RangeEncoding,
    WireRanges,
    capture,
    decode_position_info,
    encode_position_info,
    restore,
)


def holes(ledger_id: int, count: int, state: AckState) -> None:
    """`count` ranges: every other entry from 1 (entry 0 stays unacked)."""
    state.ack_entries(ledger_id, np.arange(1, 2 * count, 2, dtype=np.int64))


def test_message_ranges_keep_the_first_ranges_up_to_the_cap_and_report_the_rest() -> None:
    state = AckState(Position(1, -1))
    holes(1, 6, state)
    holes(2, 6, state)
    content, report = capture(state, RangeEncoding.MESSAGE_RANGE, max_ranges=8)
    assert len(content.ranges) == 8
    assert content.ranges.upper_ledger.tolist() == [1] * 6 + [2] * 2
    assert (report.ranges_total, report.ranges_persisted, report.truncated) == (12, 8, True)
    recovered = restore(decode_position_info(encode_position_info(content)))
    assert recovered.range_count == 8
    assert not recovered.is_acked(Position(2, 5)) and state.is_acked(Position(2, 5))


def test_long_list_maps_keep_whole_ledgers_while_acked_entries_fit() -> None:
    # OpenLongPairRangeSet.toRanges counts set bits, not ranges, and takes whole ledgers.
    state = AckState(Position(1, -1))
    holes(1, 3, state)  # 3 entries
    holes(2, 3, state)  # 6 in all
    state.ack_range(3, 5, 20)  # 22 in all, one range
    content, report = capture(state, RangeEncoding.LONG_LIST_MAP, max_ranges=6)
    assert [b.ledger_id for b in content.bitsets] == [1, 2]
    assert (report.ranges_total, report.ranges_persisted) == (7, 6)
    assert report.encoding is RangeEncoding.LONG_LIST_MAP


def test_when_no_ledger_fits_pulsar_falls_back_to_message_ranges() -> None:
    state = AckState(Position(1, -1))
    holes(1, 10, state)
    content, report = capture(state, RangeEncoding.LONG_LIST_MAP, max_ranges=4)
    assert content.bitsets == () and len(content.ranges) == 4
    assert report.encoding is RangeEncoding.MESSAGE_RANGE and report.truncated


def test_batch_index_info_is_capped_in_position_order() -> None:
    state = AckState(Position(1, -1), batch_index_level=True)
    for entry in (9, 3, 5):
        state.ack_batch_index(Position(1, entry), 4, [0])
    content, report = capture(state, RangeEncoding.MESSAGE_RANGE, 10, max_batches=2)
    assert [b.position.entry_id for b in content.batch_indexes] == [3, 5]
    assert (report.batches_total, report.batches_persisted, report.truncated) == (3, 2, True)


def test_batch_index_info_is_not_persisted_with_batch_index_acks_off() -> None:
    state = AckState(Position(1, -1), batch_index_level=False)
    state.ack_batch_index(Position(1, 3), 4, [0])
    content, report = capture(state, RangeEncoding.MESSAGE_RANGE, 10)
    assert content.batch_indexes == () and not report.truncated


def test_a_range_across_ledgers_is_expanded_with_the_layout_and_cut_safely_without() -> None:
    # Pulsar's non-open range set can persist (3:7, 5:2]: the rest of ledger 3, all of
    # ledger 4, and entries 0..2 of ledger 5.
    crossing = WireRanges(*(np.array([v], np.int64) for v in (3, 7, 5, 2)))
    content = PositionInfoContent(Position(3, 0), ranges=crossing)
    with_layout = restore(content, layout=LedgerLayout([(3, 9), (4, 4), (5, None)]))
    assert with_layout.is_acked(Position(3, 8)) and with_layout.is_acked(Position(4, 4))
    assert with_layout.is_acked(Position(5, 2)) and not with_layout.is_acked(Position(3, 7))
    without = restore(content)
    assert without.is_acked(Position(5, 2)) and not without.is_acked(Position(3, 8))
