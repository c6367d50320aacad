"""Finding the processes a test session started, even those orphaned when their parent exited.

Every process the session starts inherits a per-session environment variable; `/proc` shows a
process's initial environment, so a pulsar-lite left behind by a `ledger-janitor demo`
subprocess (re-parented to init) is still recognised as ours, and nobody else's is.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

SESSION_ENV = "PYTEST_LEDGER_JANITOR_SESSION"
PROC = Path("/proc")


@dataclass(frozen=True)
class Process:
    pid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.command}"


def _running() -> list[tuple[int, bytes, bytes]]:
    """(pid, environ, cmdline) of every live process but this one; zombies have neither."""
    found: list[tuple[int, bytes, bytes]] = []
    if not PROC.is_dir():
        return found
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if cmdline:
            found.append((int(entry.name), environ, cmdline))
    return found


def _command(cmdline: bytes) -> str:
    return cmdline.replace(b"\0", b" ").decode(errors="replace").strip()


def marked_processes(name: str, value: str) -> list[Process]:
    """Live processes started with `name=value` in their environment."""
    needle = f"{name}={value}".encode()
    return [
        Process(pid, _command(cmdline))
        for pid, environ, cmdline in _running()
        if needle in environ.split(b"\0")
    ]


def processes_mentioning(text: str) -> list[Process]:
    """Live processes whose command line contains `text` (a data directory, say)."""
    return [
        Process(pid, _command(cmdline))
        for pid, _, cmdline in _running()
        if text in _command(cmdline)
    ]


def _group(pid: int) -> int | None:
    """The process group, from /proc/PID/stat (after the command name, which may hold spaces)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[2])


def group_members(group: int) -> list[Process]:
    """Live processes of process group `group`: found even when a program has overwritten its
    environment (Chromium's processes write their title over it, hiding any marker)."""
    return [
        Process(pid, _command(cmdline)) for pid, _, cmdline in _running() if _group(pid) == group
    ]


def survivors(name: str, value: str, grace_seconds: float) -> list[Process]:
    """Those still running after `grace_seconds`: a process that was just told to stop may
    take a moment to exit. Polls, since another process cannot notify us of its exit."""
    deadline = time.monotonic() + grace_seconds
    while (left := marked_processes(name, value)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
