"""The two ports of cursor persistence: the ledger store below it, the contract above it.

`CursorLedgers` is the store a cursor writes its state to (the embedded SqliteLedgerStorage
fits). `StatePersistence` is the contract both layouts keep with the durable cursor:
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

from cursor.ack import AckState, LedgerLayout
from cursor.persistence.capture import PersistReport
from cursor.wire import IndexEntry


class CursorLedgers(Protocol):
    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int: ...

    def append(self, ledger_id: int, data: bytes) -> int:
        """Append one entry; its entry id (0, 1, 2, ...)."""
        ...

    def read(self, ledger_id: int, first: int = 0, last: int | None = None) -> list[bytes]:
        """Entries first..last inclusive (to the end when last is None)."""
        ...

    def close_ledger(self, ledger_id: int) -> None: ...


def read_entry(ledgers: CursorLedgers, ledger_id: int, entry_id: int) -> bytes | None:
    found = ledgers.read(ledger_id, entry_id, entry_id)
    return found[0] if found else None


def last_entry_id(ledgers: CursorLedgers, ledger_id: int) -> int:
    """The last entry id, -1 for an empty ledger, by probing: entry ids have no gaps.

    Doubling then bisecting costs about 2·log2(n) single-entry reads, so finding the tail of
    a 50 000-entry ledger never reads the ledger.
    """
    if read_entry(ledgers, ledger_id, 0) is None:
        return -1
    low, high = 0, 1
    while read_entry(ledgers, ledger_id, high) is not None:
        low, high = high, high * 2
    while high - low > 1:  # entry `low` exists, entry `high` does not
        middle = (low + high) // 2
        if read_entry(ledgers, ledger_id, middle) is None:
            high = middle
        else:
            low = middle
    return low


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
