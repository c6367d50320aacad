"""How a cursor's state goes into its ledger: the contract both layouts keep.

- full state (PIP-381): every flush writes the whole state, chunked when large;
- incremental (PIP-81, `persistentUnackedRangesWithMultipleEntriesEnabled`): a flush writes
  the changed ledgers' entries and a marker.
A persistence is bound to the cursor's current ledger. A rotation writes the whole state
into the new ledger with `write_into`, and only once the metadata names the new ledger does
the cursor `adopt` it; until then the old ledger stays current.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cursor.ack.ack_state import AckState
from cursor.ack.positions import LedgerLayout
from cursor.persistence.capture import PersistReport
from cursor.wire.ack_index import IndexEntry


@dataclass(frozen=True)
class WrittenState:
    ledger_id: int
    report: PersistReport
    entries: int  # appended to the ledger by this write
    # Incremental only: the entries the marker indexes, and those of ledgers over the cap,
    # which an LRU may still swap in but recovery will not see.
    index: Mapping[int, IndexEntry] = field(default_factory=dict)
    unmarked: Mapping[int, IndexEntry] = field(default_factory=dict)


@dataclass(frozen=True)
class RecoveredState:
    state: AckState
    ledger_id: int
    entry_id: int  # where the complete state was found
    skipped: int  # entries after it without a complete state: a torn or corrupt tail
    index: Mapping[int, IndexEntry] = field(default_factory=dict)


class StatePersistence(Protocol):
    ledger_id: int | None

    def flush(self, state: AckState) -> WrittenState:
        """Append the state (or what changed) to the current ledger."""
        ...

    def write_into(self, state: AckState, ledger_id: int) -> WrittenState:
        """Write the whole state into a fresh ledger, which does not become current."""
        ...

    def adopt(self, written: WrittenState) -> None:
        """Make the ledger of `written` the current one."""
        ...

    def recover(self, ledger_id: int, layout: LedgerLayout | None) -> RecoveredState:
        """The newest complete state in a ledger; that ledger becomes current (read-only)."""
        ...
