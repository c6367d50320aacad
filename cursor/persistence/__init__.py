"""How ack state goes into a cursor ledger and comes back.

The full-state (PIP-381) and incremental (PIP-81) layouts, and recovery from either. The
names the layer above uses; modules inside this layer import each other directly.
"""

from cursor.persistence import chunking, streamed
from cursor.persistence.capture import PersistReport, capture, restore
from cursor.persistence.full_state import FullStatePersistence
from cursor.persistence.incremental import IncrementalPersistence
from cursor.persistence.ledger_port import (
    CursorLedgers,
    RecoveredState,
    StatePersistence,
    WrittenState,
    last_entry_id,
)
from cursor.persistence.range_collector import RangeCollector, apply_ranges
from cursor.persistence.recovery import recover
from cursor.persistence.settings import CursorSettings

__all__ = [
    "CursorLedgers",
    "CursorSettings",
    "FullStatePersistence",
    "IncrementalPersistence",
    "PersistReport",
    "RangeCollector",
    "RecoveredState",
    "StatePersistence",
    "WrittenState",
    "apply_ranges",
    "capture",
    "chunking",
    "last_entry_id",
    "recover",
    "restore",
    "streamed",
]
