"""The demo's --workdir: running the demo again on it just works.

The demo leaves a marker file beside its SQLite store and broker data; the next run removes
those files (and says so) before it starts. A directory holding such files that no demo
marked is refused, in one line, rather than emptied.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.errors import ConfigurationError

MARKER = ".ledger-janitor-demo"
OWN_FILES = ("janitor.db", "janitor.db-wal", "janitor.db-shm", "broker")


def prepare_workdir(workdir: Path) -> str:
    """Make `workdir` ready for a run: an earlier demo's files (known by the marker the demo
    leaves) are removed and named; files of anything else are never touched."""
    workdir.mkdir(parents=True, exist_ok=True)
    present = [name for name in OWN_FILES if (workdir / name).exists()]
    if present and not (workdir / MARKER).exists():
        raise ConfigurationError(
            f"{workdir} holds {', '.join(present)} that no demo left there: "
            "pass another --workdir (the demo creates it)"
        )
    for name in present:
        path = workdir / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    (workdir / MARKER).write_text("files of `ledger-janitor demo`: removed by its next run\n")
    return ", ".join(present)
