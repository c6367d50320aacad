"""Headless Chromium (Debian's `chromium` package) opening a page, as an operator's browser would.

Each run has its own throw-away profile (`--user-data-dir`) and its own process group, and is
marked in its environment: when the browser exits, or its time is up, the whole group is
killed, and any process of the run still alive after that, found by its group (Chromium's
own processes overwrite their environment) or by the mark (a process that left the group),
is reported in `ChromiumRun.survivors`, then killed too, so a test can assert there was none.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from harness.leaks import Process, group_members, marked_processes

BINARY = "/usr/bin/chromium"
RUN_ENV = "LEDGER_JANITOR_CHROMIUM_RUN"
_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in a container has no user namespaces to sandbox with
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)


@dataclass(frozen=True)
class ChromiumRun:
    stdout: str
    stderr: str
    survivors: list[Process]  # this run's processes alive after its group was killed


class ChromiumError(RuntimeError):
    def __init__(self, message: str, run: ChromiumRun | None = None) -> None:
        super().__init__(message)
        self.run = run


def binary() -> str:
    found = shutil.which("chromium") or BINARY
    if not Path(found).exists():
        raise ChromiumError("needs Debian's chromium package; scripts/test.sh installs it")
    return found


def run_chromium(page: Path, *flags: str, timeout: float = 90.0) -> ChromiumRun:
    """Open `page` (a file) with `flags`; stdout (e.g. `--dump-dom`) comes back as text."""
    mark = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="chromium-") as scratch:
        profile, out, err = Path(scratch, "profile"), Path(scratch, "out"), Path(scratch, "err")
        # Files, not pipes: a helper process that keeps a pipe open cannot hang the read.
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [binary(), *_FLAGS, f"--user-data-dir={profile}", *flags, page.resolve().as_uri()],
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,  # its own process group, killed whole below
                env={**os.environ, **_scratch_home(Path(scratch)), RUN_ENV: mark},
            )
            try:
                process.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(process)
        left = _survivors(mark, group=process.pid, grace_seconds=10)
        for survivor in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(survivor.pid, signal.SIGKILL)
        run = ChromiumRun(out.read_text(errors="replace"), err.read_text(errors="replace"), left)
    if timed_out:
        raise ChromiumError(f"chromium did not finish {page} within {timeout}s", run)
    if process.returncode != 0:
        raise ChromiumError(f"chromium exited {process.returncode} on {page}:\n{run.stderr}", run)
    return run


def _scratch_home(scratch: Path) -> dict[str, str]:
    """Where Chromium keeps what the profile does not hold (its crash handler's database):
    the run's scratch directory, never the user's home. No D-Bus to look for, either."""
    return {
        "XDG_CONFIG_HOME": str(scratch / "config"),
        "XDG_CACHE_HOME": str(scratch / "cache"),
        "DBUS_SESSION_BUS_ADDRESS": "disabled:",
    }


def _survivors(mark: str, group: int, grace_seconds: float) -> list[Process]:
    """The run's processes still alive: in its group, or marked (one that left the group)."""
    deadline = time.monotonic() + grace_seconds
    while True:
        left = {p.pid: p for p in [*group_members(group), *marked_processes(RUN_ENV, mark)]}
        if not left or time.monotonic() > deadline:
            return list(left.values())
        time.sleep(0.1)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def dump_dom(page: Path, *flags: str) -> ChromiumRun:
    """The DOM after loading (and running whatever scripts the page would run)."""
    return run_chromium(page, "--dump-dom", *flags)


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 1600) -> ChromiumRun:
    return run_chromium(page, f"--screenshot={png}", f"--window-size={width},{height}")


def print_to_pdf(page: Path, pdf: Path) -> ChromiumRun:
    return run_chromium(page, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
