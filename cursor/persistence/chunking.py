"""PIP-381: a state too large for one entry, written as chunks and a JSON footer.

Write: a payload smaller than `max_entry_size` is one entry, exactly what an unchanged reader
expects. Otherwise it is cut into `max_entry_size` chunks followed by the footer
`{"numParts":N,"length":L}` (Jackson's rendering of Pulsar's ChunkSequenceFooter).

Read: the entry at a position is either a plain state or a footer; a footer means the N
entries before it, concatenated, must be L bytes. No protobuf payload can start with `{`
(field 15, wire type 3 does not occur), and a compressed one starts with 0x47.

Recovery walks back from the last entry to the newest state that is complete and accepted by
the caller's decoder, so a torn tail (a writer that died between chunks, or before the
footer) falls back to the previous complete state. An entry of exactly `max_entry_size`
bytes is a chunk, never a plain state (plain states are strictly smaller), which keeps the
first chunk of a torn sequence from passing for a state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from core.errors import DecodeError
from cursor.errors import ChunkSequenceError, NoCompleteStateError
from cursor.persistence.ledger_port import CursorLedgers, last_entry_id, read_entry

T = TypeVar("T")
MAX_FOOTER_BYTES = 256


@dataclass(frozen=True)
class ChunkFooter:
    num_parts: int
    length: int

    def to_bytes(self) -> bytes:
        fields = {"numParts": self.num_parts, "length": self.length}
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def parse(cls, entry: bytes) -> ChunkFooter | None:
        """The footer in `entry`; None when the entry is not a footer at all."""
        if not entry.startswith(b"{"):
            return None
        if len(entry) > MAX_FOOTER_BYTES:
            raise ChunkSequenceError(f"a {len(entry)}-byte entry starting with '{{' is no footer")
        try:
            fields = json.loads(entry)
            parts, length = fields["numParts"], fields["length"]
        except (ValueError, TypeError, KeyError) as exc:
            raise ChunkSequenceError(f"corrupt chunk footer {entry[:80]!r}: {exc}") from None
        if not (isinstance(parts, int) and isinstance(length, int) and parts >= 1 and length >= 0):
            raise ChunkSequenceError(f"chunk footer out of range: {entry[:80]!r}")
        return cls(parts, length)


@dataclass(frozen=True)
class Written:
    entry_id: int  # the footer, or the single entry
    entries: int  # appended, chunks and footer included


@dataclass(frozen=True)
class Found(Generic[T]):
    value: T
    entry_id: int
    skipped: int  # entries after it that held no complete state (a torn or corrupt tail)


def split(payload: bytes, max_entry_size: int) -> list[bytes]:
    """The entries for one payload: itself, or its chunks and the footer."""
    if len(payload) < max_entry_size:
        return [payload]
    chunks = [payload[i : i + max_entry_size] for i in range(0, len(payload), max_entry_size)]
    return [*chunks, ChunkFooter(len(chunks), len(payload)).to_bytes()]


def write(ledgers: CursorLedgers, ledger_id: int, payload: bytes, max_entry_size: int) -> Written:
    entries = split(payload, max_entry_size)
    entry_id = -1
    for entry in entries:
        entry_id = ledgers.append(ledger_id, entry)
    return Written(entry_id, len(entries))


def join(entries: list[bytes]) -> bytes:
    """A payload from its entries as `split` made them (the CLI reads chunk files this way)."""
    footer = ChunkFooter.parse(entries[-1])
    if footer is None:
        if len(entries) != 1:
            raise ChunkSequenceError(f"{len(entries)} entries but no footer at the end")
        return entries[0]
    return _assemble(entries[:-1], footer)


def read_at(ledgers: CursorLedgers, ledger_id: int, entry_id: int) -> bytes:
    """The payload whose last entry is `entry_id`."""
    entry = read_entry(ledgers, ledger_id, entry_id)
    if entry is None:
        raise ChunkSequenceError(f"ledger {ledger_id} has no entry {entry_id}")
    return _payload(ledgers, ledger_id, entry_id, entry)


def _payload(ledgers: CursorLedgers, ledger_id: int, entry_id: int, entry: bytes) -> bytes:
    footer = ChunkFooter.parse(entry)
    if footer is None:
        return entry
    first = entry_id - footer.num_parts
    if first < 0:
        raise ChunkSequenceError(f"footer at {entry_id} claims {footer.num_parts} parts")
    return _assemble(ledgers.read(ledger_id, first, entry_id - 1), footer)


def _assemble(chunks: list[bytes], footer: ChunkFooter) -> bytes:
    if len(chunks) != footer.num_parts:
        raise ChunkSequenceError(f"{len(chunks)} chunks, footer says {footer.num_parts}")
    payload = b"".join(chunks)
    if len(payload) != footer.length:
        raise ChunkSequenceError(f"{len(payload)} bytes in chunks, footer says {footer.length}")
    return payload


def find_latest(
    ledgers: CursorLedgers,
    ledger_id: int,
    max_entry_size: int,
    accept: Callable[[bytes, int], T],
) -> Found[T]:
    """The newest complete state `accept` can decode (it raises DecodeError otherwise)."""
    last = last_entry_id(ledgers, ledger_id)
    entry_id = last
    while entry_id >= 0:
        entry = read_entry(ledgers, ledger_id, entry_id) or b""
        try:
            if entry.startswith(b"{") or len(entry) != max_entry_size:
                payload = _payload(ledgers, ledger_id, entry_id, entry)
                return Found(accept(payload, entry_id), entry_id, last - entry_id)
        except DecodeError:
            pass  # torn or corrupt: the state before it
        entry_id -= 1
    raise NoCompleteStateError(f"cursor ledger {ledger_id} holds no complete state")
