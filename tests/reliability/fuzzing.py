"""The decoders under fuzz, each as one callable, and the bounds every input must respect.

Shared by the hypothesis tests (test_fuzz_decoders.py, through sandbox.py) and the atheris
harness (atheris_fuzz.py): a decoder may return or raise DecodeError, nothing else, and must
do so quickly and in bounded memory.

Memory is read from the kernel (/proc/self/status), not from tracemalloc: the protobuf (upb),
LZ4, ZSTD and Snappy decoders allocate natively, where tracemalloc sees nothing.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from core.errors import DecodeError
from cursor.persistence.chunking import ChunkFooter, join
from cursor.wire import compression
from cursor.wire.cursor_info_codec import decode_cursor_info
from cursor.wire.position_info_codec import decode_position_info
from deletion.adapters.pulsar_metadata import parse
from deletion.domain import message
from deletion.domain.topics import TopicName
from deletion.wire import bookkeeper_metadata
from deletion.wire.metadata_codec import MAX_UNCOMPRESSED, unwrap
from deletion.wire.proto.ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator

# Per input; CI machines are small and shared.
MAX_SECONDS = 2.0
# Resident memory an input may add: a metadata value may legitimately expand to
# MAX_UNCOMPRESSED; anything else stays small.
SMALL = 8 * 1024 * 1024
# Address space an input may reserve, touched or not (a ZSTD frame may ask for a 128 MiB window).
MAX_RESERVED = 256 * 1024 * 1024
# RLIMIT_AS above the start: past it every allocation fails, so a runaway decoder cannot take
# the machine down; below it, the two bounds above are measured. A refused allocation is a
# MemoryError (a finding) from Python, LZ4 and ZSTD, but upb reports it as a parse error: an
# attempt past the ceiling from upb alone would go unseen (one past MAX_RESERVED would not).
CEILING = 4 * 1024 * 1024 * 1024
# How far the two readings below may be off (see `measure`).
SLACK = 1024 * 1024
# For the processes that decode: glibc's big blocks always fresh mappings, unmapped when freed,
# so one input cannot reuse another's unseen (its thresholds otherwise move up to 32 MiB).
MALLOC_ENVIRONMENT = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}


def _ml(data: bytes) -> object:
    info = ManagedLedgerInfo()
    parse(info, data, "fuzz")
    return info


def _cursor(data: bytes) -> object:
    info = ManagedCursorInfo()
    parse(info, data, "fuzz")
    return info


def _schema(data: bytes) -> object:
    locator = SchemaLocator()
    parse(locator, data, "fuzz")
    return locator


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
class Memory:
    """This process's memory as the kernel counts it (bytes)."""

    resident: int
    resident_peak: int
    anonymous: int  # the part of `resident` that is not file pages
    reserved: int
    reserved_peak: int

    @staticmethod
    def now() -> Memory:
        keys = (b"VmRSS", b"VmHWM", b"RssAnon", b"VmSize", b"VmPeak")
        fields: dict[bytes, int] = {}
        with open("/proc/self/status", "rb") as status:
            for line in status:
                key, _, value = line.partition(b":")
                if key in keys:
                    fields[key] = int(value.split()[0]) * 1024
        return Memory(*(fields[key] for key in keys))


def reset_resident_peak() -> None:
    """VmHWM back to the current RSS, so the next reading is this input's own peak."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


@dataclass(frozen=True)
class Outcome:
    value: object | None
    error: DecodeError | None
    fault: str | None  # anything but DecodeError, a crash or a hang: a finding
    seconds: float
    resident_bytes: int  # the input's peak RSS above the RSS it started with
    reserved_bytes: int  # the same for address space


def measure(target: Target, data: bytes) -> Outcome:
    """Decode once, in this process, and read the kernel's peaks. Both may miss memory this
    process freed earlier and still holds (reused without a new page or mapping); the reserved
    peak may also overstate by the address space given back since the process's own peak.
    sandbox.py keeps both slacks under `SLACK`. The RSS counters themselves are per-CPU sums,
    read to within a few hundred KiB."""
    reset_resident_peak()
    before = Memory.now()
    started = time.perf_counter()
    value, error, fault = None, None, None
    try:
        value = target.decode(data)
    except DecodeError as exc:
        error = exc
    except BaseException:  # MemoryError at the ceiling included
        fault = traceback.format_exc()
    seconds = time.perf_counter() - started
    after = Memory.now()
    return Outcome(
        value,
        error,
        fault,
        seconds,
        after.resident_peak - before.resident,
        after.reserved_peak - before.reserved,
    )


def violations(target: Target, data: bytes, outcome: Outcome) -> list[str]:
    """What is wrong with this outcome, if anything."""
    found = [outcome.fault] if outcome.fault else []
    if outcome.seconds >= MAX_SECONDS:
        found.append(f"{outcome.seconds:.2f} s")
    if outcome.resident_bytes > target.max_bytes:
        found.append(f"{outcome.resident_bytes} resident bytes (bound {target.max_bytes})")
    if outcome.reserved_bytes > MAX_RESERVED:
        found.append(f"{outcome.reserved_bytes} reserved bytes (bound {MAX_RESERVED})")
    return [f"{target.name} on {len(data)} bytes {data[:64]!r}: {v}" for v in found]
