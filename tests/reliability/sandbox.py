"""Inputs decoded in a child process, so that memory is the kernel's count, not tracemalloc's.

A worker (`python -m tests.reliability.sandbox`, started by `Sandbox`) imports the decoders
once, then forks a child that decodes inputs one at a time. The child limits its address space
(RLIMIT_AS, `CEILING` above where it started) and reports, per input, its peak RSS and peak
address space above where that input started: native allocations (upb, LZ4, ZSTD, Snappy) count
like any other. Memory freed earlier and reused would go unseen, so glibc's free memory is
handed back when a child starts, big blocks are always fresh mappings (MALLOC_ENVIRONMENT), and
as soon as the child holds more than `SLACK` of anonymous memory beyond its start, or has given
back more than `SLACK` of address space since its peak, it leaves and the next input gets a
fresh fork. A child that crashes or outlives `HARD_SECONDS` is a finding; the worker goes on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import resource
import select
import signal
import struct
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tests.reliability.faulty_decoders import FAULTY
from tests.reliability.fuzzing import (
    CEILING,
    MALLOC_ENVIRONMENT,
    SLACK,
    TARGETS,
    Memory,
    Outcome,
    measure,
    violations,
)

HARD_SECONDS = 20.0
REPO = Path(__file__).resolve().parents[2]
_FRAME = struct.Struct(">I")
_ALL = {**TARGETS, **FAULTY}


def _frame(item: object) -> bytes:
    payload = pickle.dumps(item)
    return _FRAME.pack(len(payload)) + payload


def _send(stream: IO[bytes], item: object) -> None:
    stream.write(_frame(item))
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    header = stream.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    return pickle.loads(stream.read(_FRAME.unpack(header)[0]))


# --- the worker and its child --------------------------------------------------------------


def _child(requests: IO[bytes], replies: IO[bytes]) -> None:
    with contextlib.suppress(AttributeError):  # glibc only
        # What the worker freed and glibc kept, handed back: reused, it would go unseen.
        ctypes.CDLL(None).malloc_trim(0)
    start = Memory.now()
    ceiling = start.reserved + CEILING
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    while (request := _receive(requests)) is not None:
        name, data = request
        outcome = measure(_ALL[name], data)
        now = Memory.now()
        done = now.anonymous - start.anonymous > SLACK or now.reserved_peak - now.reserved > SLACK
        try:
            _send(replies, (outcome, done))
        except Exception:  # a value that does not pickle still tells what it was
            _send(replies, (replace(outcome, value=repr(outcome.value)[:500]), done))
        if done:
            return


class _Fork:
    """The worker's side of one child."""

    def __init__(self) -> None:
        request_read, request_write = os.pipe()
        self._replies, reply_write = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # pragma: no cover - the child leaves through os._exit only
            status = 1
            try:
                os.close(request_write)
                os.close(self._replies)
                with os.fdopen(request_read, "rb") as requests, os.fdopen(reply_write, "wb") as out:
                    _child(requests, out)
                status = 0
            finally:
                os._exit(status)
        os.close(request_read)
        os.close(reply_write)
        self._requests = os.fdopen(request_write, "wb")

    def run(self, name: str, data: bytes, hard_seconds: float) -> tuple[Outcome, bool]:
        """The outcome, and whether this child is gone (or must go) afterwards."""
        started = time.perf_counter()
        deadline = time.monotonic() + hard_seconds
        try:
            _send(self._requests, (name, data))
            header = self._read(_FRAME.size, deadline)
            reply = self._read(_FRAME.unpack(header)[0], deadline)
        except (BrokenPipeError, EOFError):
            fault = self._death()
        except TimeoutError:
            os.kill(self._pid, signal.SIGKILL)
            fault = f"no answer in {hard_seconds} s: killed"
        else:
            outcome, done = pickle.loads(reply)
            return outcome, done
        return Outcome(None, None, fault, time.perf_counter() - started, 0, 0), True

    def _read(self, size: int, deadline: float) -> bytes:
        data = b""
        while len(data) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self._replies, size - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _death(self) -> str:
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        if os.WIFSIGNALED(status):
            return f"died of {signal.Signals(os.WTERMSIG(status)).name}"
        return f"exited with status {os.WEXITSTATUS(status)} and no answer"

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self._requests.close()  # the child reads the end of its requests and leaves
        os.close(self._replies)
        if self._pid:
            os.waitpid(self._pid, 0)


def serve() -> None:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a decoder prints must not corrupt the replies
    requests = sys.stdin.buffer
    # First calls initialise lazily (imports, compiled patterns): once here, not in each child.
    for target in TARGETS.values():
        for sample in (b"", b"\x00", b"\x47\x78\x00\x00\x00\x00", b"tenant/ns/t"):
            with contextlib.suppress(Exception):
                target.decode(sample)
    child: _Fork | None = None
    while (request := _receive(requests)) is not None:
        name, data, hard_seconds = request
        child = child or _Fork()
        outcome, done = child.run(name, data, hard_seconds)
        if done:
            child.close()
            child = None
        _send(replies, outcome)
    if child is not None:
        child.close()


# --- the client ----------------------------------------------------------------------------


class Sandbox:
    """One worker process; close it (or use `with`) so that none is left running."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.sandbox"],
            cwd=REPO,
            env={**os.environ, **MALLOC_ENVIRONMENT},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def run(self, name: str, data: bytes, hard_seconds: float = HARD_SECONDS) -> Outcome:
        assert self._process.stdin is not None and self._process.stdout is not None
        _send(self._process.stdin, (name, data, hard_seconds))
        outcome = _receive(self._process.stdout)
        if not isinstance(outcome, Outcome):
            raise RuntimeError(f"the sandbox worker stopped ({self._process.poll()})")
        return outcome

    def check(self, name: str, data: bytes) -> Outcome:
        """Decode `data` with the named target; fail on anything outside its bounds."""
        outcome = self.run(name, data)
        found = violations(_ALL[name], data, outcome)
        assert not found, "\n".join(found)
        return outcome

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        assert self._process.stdout is not None
        self._process.stdout.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


if __name__ == "__main__":
    serve()
