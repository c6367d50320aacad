"""The decoders under fuzz, each as one callable, and the bound every input must respect.

Shared by the hypothesis tests (test_fuzz_decoders.py) and the atheris harness
(atheris_fuzz.py): a decoder may return or raise DecodeError, nothing else, and must do so
quickly and in bounded memory.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

from cursor import compression
from cursor.chunking import ChunkFooter, join
from cursor.cursor_info_codec import decode_cursor_info
from cursor.position_info_codec import decode_position_info
from deletion import message
from deletion.ledgers import bookkeeper_metadata
from deletion.metadata_codec import MAX_UNCOMPRESSED, unwrap
from deletion.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from deletion.proto.schema_storage_format_pb2 import SchemaLocator
from deletion.pulsar_metadata import parse
from deletion.topics import TopicName
from ledger_janitor.errors import DecodeError

# Per input. Generous: tracemalloc slows everything, and CI machines are small.
MAX_SECONDS = 2.0
# A metadata value may legitimately expand to MAX_UNCOMPRESSED; anything else stays small.
SMALL = 8 * 1024 * 1024


def _ml(data: bytes) -> object:
    return parse(ManagedLedgerInfo(), data, "fuzz")


def _cursor(data: bytes) -> object:
    return parse(ManagedCursorInfo(), data, "fuzz")


def _schema(data: bytes) -> object:
    return parse(SchemaLocator(), data, "fuzz")


def _chunks(data: bytes) -> object:
    """Entries separated by NUL, the last one perhaps a footer."""
    return join(data.split(b"\0"))


def _topic(data: bytes) -> object:
    return TopicName.parse(data.decode("utf-8", "replace"))


@dataclass(frozen=True)
class Target:
    name: str
    decode: Callable[[bytes], object]
    max_bytes: int = SMALL


TARGETS = {
    target.name: target
    for target in (
        Target("avro-message", message.decode),
        Target("managed-ledger-info", _ml, MAX_UNCOMPRESSED + SMALL),
        Target("managed-cursor-info", _cursor, MAX_UNCOMPRESSED + SMALL),
        Target("schema-locator", _schema, MAX_UNCOMPRESSED + SMALL),
        Target("compression-header", lambda data: unwrap(data, "fuzz"), MAX_UNCOMPRESSED + SMALL),
        # Cursor state may claim up to 2 GiB; these inputs are small, and so must be the cost.
        Target("cursor-compression", lambda data: compression.decompress(data, "fuzz"), 8 * SMALL),
        Target("bookkeeper-metadata", bookkeeper_metadata.decode),
        Target("position-info", decode_position_info),
        Target("cursor-info", decode_cursor_info),
        Target("chunk-footer", ChunkFooter.parse),
        Target("chunk-sequence", _chunks),
        Target("topic-name", _topic),
    )
}


@dataclass(frozen=True)
class Outcome:
    value: object | None
    error: DecodeError | None
    seconds: float
    peak_bytes: int


def run_bounded(target: Target, data: bytes) -> Outcome:
    """Decode under tracemalloc; anything but DecodeError propagates (a finding)."""
    started_tracing = not tracemalloc.is_tracing()
    if started_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    value, error = None, None
    try:
        value = target.decode(data)
    except DecodeError as exc:
        error = exc
    finally:
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] - base
        if started_tracing:
            tracemalloc.stop()
    return Outcome(value, error, seconds, peak)


def check(target: Target, data: bytes) -> Outcome:
    outcome = run_bounded(target, data)
    assert outcome.seconds < MAX_SECONDS, f"{target.name}: {outcome.seconds:.2f}s on {data[:64]!r}"
    assert outcome.peak_bytes <= target.max_bytes, (
        f"{target.name}: {outcome.peak_bytes} bytes for {len(data)} input bytes {data[:64]!r}"
    )
    return outcome
