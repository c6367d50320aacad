"""Consoles for human output that never read what they print as Rich markup, and the words
and numbers that output is made of.

Help texts, store URLs (`zk:host:2181[/chroot]`), file paths, topic names and archive reasons
hold square brackets; Rich would read them as style tags, then drop them silently or crash on
a closing tag it never opened. Styling goes through `Text` instead.

On a terminal Rich fits tables to its width. Anywhere else (`| cat`, `2>file`, a pod's log)
it would assume 80 columns and cut every cell to `namesp…`; there no width is assumed (unless
COLUMNS asks for one): a table row is one line with every value whole, and text is not wrapped.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.table import Column
from rich.text import Text

# Off a terminal: wide enough for any row we print, so nothing is cut or wrapped.
UNLIMITED_WIDTH = 100_000


def plain_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if _is_terminal(stream) or "COLUMNS" in os.environ:
        return Console(stderr=stderr, markup=False, highlight=False)
    return Console(
        stderr=stderr, markup=False, highlight=False, width=UNLIMITED_WIDTH, soft_wrap=True
    )


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


err = plain_console(stderr=True)


def print_error(message: object, console: Console | None = None) -> None:
    """`error: <message>`, the message exactly as given."""
    # Unwrapped: an error line is copied and searched for as a whole.
    (console or err).print(Text.assemble(("error:", "red"), " ", str(message)), soft_wrap=True)


def count(n: int) -> str:
    """`n` with thousands separators: 71,487."""
    return f"{n:,}"


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """`1 entry`, `2 entries`, `71,487 orphans`: the count and the word that agrees with it."""
    if n == 1:
        return f"1 {singular}"
    return f"{count(n)} {plural_form or _plural_of(singular)}"


def _plural_of(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def one_line(text: str) -> str:
    """A table cell on one line: a row is one line, whatever a reason holds."""
    return " | ".join(part.strip() for part in text.splitlines() if part.strip())


def whole(*headers: str) -> list[Column]:
    """Table columns of names and ids: on a narrow terminal folded onto more lines, never
    cut to `namesp…` (a cut name cannot be copied, and rows become alike)."""
    return [Column(header, overflow="fold") for header in headers]
