"""The fuzz harness can fail: deliberately bad decoders (faulty_decoders.py) are caught by the
sandbox's kernel-counted bounds, where tracemalloc saw nothing, and the worker goes on."""

from __future__ import annotations

import re
import tracemalloc

import pytest

from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo
from tests.reliability.faulty_decoders import FAULTY, MIB
from tests.reliability.fuzzing import MAX_RESERVED, MAX_SECONDS, SLACK, TARGETS, Outcome, violations
from tests.reliability.sandbox import Sandbox

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("name", "caught"),
    [
        ("native-touches-256mib", "resident bytes (bound"),
        ("native-reserves-2gib", "reserved bytes (bound"),
        ("native-reserves-6gib", "MemoryError"),  # past the RLIMIT_AS ceiling: refused
        ("raises-value-error", "ValueError"),
        ("segfaults", "died of SIGSEGV"),
    ],
)
def test_a_decoder_past_its_bounds_fails(sandbox: Sandbox, name: str, caught: str) -> None:
    with pytest.raises(AssertionError, match=re.escape(caught)):
        sandbox.check(name, b"x")
    sandbox.check("avro-message", b"")  # the worker survived


def test_a_hang_is_killed(sandbox: Sandbox) -> None:
    outcome = sandbox.run("hangs", b"", hard_seconds=0.3)
    assert outcome.fault == "no answer in 0.3 s: killed"
    assert violations(FAULTY["hangs"], b"", outcome)
    sandbox.check("avro-message", b"")


def test_a_slow_input_fails() -> None:
    outcome = Outcome(None, None, None, MAX_SECONDS + 0.1, 0, 0)
    assert violations(TARGETS["avro-message"], b"", outcome) == [
        f"avro-message on 0 bytes b'': {MAX_SECONDS + 0.1:.2f} s"
    ]


def test_memory_within_bounds_is_measured_and_passes(sandbox: Sandbox) -> None:
    outcome = sandbox.check("native-touches-4mib", b"")
    # The kernel's RSS counters are per-CPU sums, read to within a few hundred KiB.
    assert 4 * MIB - SLACK <= outcome.resident_bytes <= 4 * MIB + 2 * SLACK
    assert 4 * MIB <= outcome.reserved_bytes < MAX_RESERVED


def test_native_allocations_count_where_tracemalloc_saw_none(sandbox: Sandbox) -> None:
    """upb builds a 100,000-entry ManagedLedgerInfo in its own arena: the sandbox counts it,
    the old tracemalloc bound did not (nor 256 MiB memset through libc)."""
    one = ManagedLedgerInfo(ledgerInfo=[ManagedLedgerInfo.LedgerInfo(ledgerId=7, entries=9)])
    data = one.SerializeToString() * 100_000  # concatenated, a repeated field accumulates
    outcome = sandbox.check("managed-ledger-info", data)
    assert outcome.error is None
    assert outcome.resident_bytes > 3 * MIB, outcome.resident_bytes

    tracemalloc.start()
    try:
        TARGETS["managed-ledger-info"].decode(data)
        FAULTY["native-touches-256mib"].decode(b"")
        seen = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen < MIB, seen
