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
from collections.abc import Callable, Iterable, Iterator
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
    payload_bytes: int = 0


@dataclass(frozen=True)
class Found(Generic[T]):
    value: T
    entry_id: int
    skipped: int  # entries after it that held no complete state (a torn or corrupt tail)


def split(payload: bytes, max_entry_size: int) -> list[bytes]:
    """The entries for one payload: itself, or its chunks and the footer."""
    return list(_entries(payload, max_entry_size))


def _entries(payload: bytes, max_entry_size: int) -> Iterator[bytes]:
    if len(payload) < max_entry_size:
        yield payload
        return
    for start in range(0, len(payload), max_entry_size):
        yield payload[start : start + max_entry_size]
    yield ChunkFooter(-(-len(payload) // max_entry_size), len(payload)).to_bytes()


def write(ledgers: CursorLedgers, ledger_id: int, payload: bytes, max_entry_size: int) -> Written:
    """One chunk in memory at a time beside the payload, not a second copy of it."""
    entry_id = -1
    entries = 0
    for entry in _entries(payload, max_entry_size):
        entry_id = ledgers.append(ledger_id, entry)
        entries += 1
    return Written(entry_id, entries, len(payload))


def write_pieces(
    ledgers: CursorLedgers,
    ledger_id: int,
    pieces: Iterable[bytes | memoryview],
    max_entry_size: int,
) -> Written:
    """`write` of the pieces' concatenation, which is never built: each chunk is joined from
    the pieces it spans as soon as they are there, and appended. Memory stays at a chunk and
    a piece whatever the payload's size."""
    pending: list[memoryview] = []
    held = length = entries = 0
    entry_id = -1
    for piece in pieces:
        view = memoryview(piece).cast("B")
        length += len(view)
        while held + len(view) >= max_entry_size:
            take = max_entry_size - held
            pending.append(view[:take])
            entry_id = ledgers.append(ledger_id, b"".join(pending))
            entries += 1
            pending, held, view = [], 0, view[take:]
        if len(view):
            pending.append(view)
            held += len(view)
    if entries == 0:  # smaller than a chunk after all: one plain entry
        entry_id = ledgers.append(ledger_id, b"".join(pending))
        return Written(entry_id, 1, length)
    if held:
        ledgers.append(ledger_id, b"".join(pending))
        entries += 1
    entry_id = ledgers.append(ledger_id, ChunkFooter(entries, length).to_bytes())
    return Written(entry_id, entries + 1, length)


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
    return find_latest_pieces(
        ledgers, ledger_id, max_entry_size, lambda pieces, at: accept(b"".join(pieces), at)
    )


def find_latest_pieces(
    ledgers: CursorLedgers,
    ledger_id: int,
    max_entry_size: int,
    accept: Callable[[Iterator[bytes], int], T],
) -> Found[T]:
    """`find_latest` handing `accept` the payload in pieces, its chunks read one at a time as
    it asks for them: a chunked state is never held whole unless `accept` joins it. A
    sequence whose chunks do not add up raises ChunkSequenceError once `accept` has read it."""
    last = last_entry_id(ledgers, ledger_id)
    entry_id = last
    while entry_id >= 0:
        entry = read_entry(ledgers, ledger_id, entry_id) or b""
        try:
            if entry.startswith(b"{") or len(entry) != max_entry_size:
                pieces = _pieces(ledgers, ledger_id, entry_id, entry)
                return Found(accept(pieces, entry_id), entry_id, last - entry_id)
        except DecodeError:
            pass  # torn or corrupt: the state before it
        entry_id -= 1
    raise NoCompleteStateError(f"cursor ledger {ledger_id} holds no complete state")


def _pieces(ledgers: CursorLedgers, ledger_id: int, entry_id: int, entry: bytes) -> Iterator[bytes]:
    footer = ChunkFooter.parse(entry)
    if footer is None:
        yield entry
        return
    first = entry_id - footer.num_parts
    if first < 0:
        raise ChunkSequenceError(f"footer at {entry_id} claims {footer.num_parts} parts")
    length = 0
    for chunk_id in range(first, entry_id):
        chunk = read_entry(ledgers, ledger_id, chunk_id)
        if chunk is None:
            raise ChunkSequenceError(f"ledger {ledger_id} has no entry {chunk_id}")
        length += len(chunk)
        if length > footer.length:
            break
        yield chunk
    if length != footer.length:
        raise ChunkSequenceError(f"{length} bytes in chunks, footer says {footer.length}")
