"""Deliberately bad "decoders" that the fuzz harness must catch (test_fuzz_harness.py).

The native ones allocate through libc, as upb, LZ4 and ZSTD do, where tracemalloc is blind.
"""

from __future__ import annotations

import ctypes
import time

from tests.reliability.fuzzing import Target

_libc = ctypes.CDLL(None)
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]
MIB = 1024 * 1024


def native(size: int, touch: bool) -> None:
    pointer = _libc.malloc(size)
    if not pointer:  # as the LZ4 and ZSTD bindings do (upb makes it a parse error instead)
        raise MemoryError(f"malloc({size}) refused")
    try:
        if touch:
            ctypes.memset(pointer, 1, size)
    finally:
        _libc.free(pointer)


def _hang(_: bytes) -> object:
    while True:
        time.sleep(0.01)


FAULTY = {
    target.name: target
    for target in (
        Target("native-reserves-2gib", lambda _: native(2048 * MIB, touch=False)),
        Target("native-touches-256mib", lambda _: native(256 * MIB, touch=True)),
        Target("native-touches-4mib", lambda _: native(4 * MIB, touch=True)),  # within bounds
        Target("native-reserves-6gib", lambda _: native(6144 * MIB, touch=False)),  # > CEILING
        Target("raises-value-error", lambda data: int(data)),
        Target("segfaults", lambda _: ctypes.string_at(0)),
        Target("hangs", _hang),
    )
}
