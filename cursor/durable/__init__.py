"""The durable cursor: its znode, its rotated ledger, the dispatch gate, and inspection.

The names the library's API uses; `json_form` and `inspection` serve the cursor CLI and are
imported from their modules.
"""

from cursor.durable.durable_cursor import CursorStores, DurableCursor
from cursor.durable.gate import AckStateGate
from cursor.durable.metadata import CursorMetadata
from cursor.durable.rotation import Rotation, RotationOutcome

__all__ = [
    "AckStateGate",
    "CursorMetadata",
    "CursorStores",
    "DurableCursor",
    "Rotation",
    "RotationOutcome",
]
