"""Cursor-state errors, as subclasses of the project's one hierarchy."""

from __future__ import annotations

from core.errors import DecodeError, JanitorError


class AckStateError(JanitorError):
    """An acknowledgment that can never be valid: a negative entry, an index outside its batch."""


class ChunkSequenceError(DecodeError):
    """A PIP-381 chunk sequence whose footer, parts or length do not add up."""


class NoCompleteStateError(DecodeError):
    """A cursor ledger holds no complete state at all: nothing to fall back to."""


class RotationError(JanitorError):
    """A cursor-ledger rotation did not switch the cursor to its new ledger."""


class CursorNotFoundError(JanitorError):
    """The metadata store has no znode for the cursor."""
