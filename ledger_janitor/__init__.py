"""ledger-janitor: two-phase deletion of Apache Pulsar ledgers."""

from __future__ import annotations

import re
from importlib import metadata

__version__ = "0.1.0"
DISTRIBUTION = "pulsar-ledger-janitor"
HELP = "Delete Apache Pulsar ledgers safely, in two phases (PIP-186)."  # the top-level group's


def install_hint(extra: str) -> str:
    """The pip command that installs an optional extra, whichever way this package was installed.

    Names the extra's own requirements (read from the installed metadata), so that it works
    from a clone (`pip install -e .`) and beside a wheel alike; `pip install '.[extra]'` works
    only inside a clone, and the distribution name only where an index serves it.
    """
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    try:
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        requires = []
    wanted = [r.split(";")[0].strip() for r in requires if marker.search(r)]
    if not wanted:
        return f"pip install '.[{extra}]' (from the project's directory)"
    return "pip install " + " ".join(f"'{r}'" for r in wanted)
