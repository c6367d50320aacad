"""The ledger store a cursor writes its state to (the embedded SqliteLedgerStorage fits)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


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
