"""Consoles for human output that never read what they print as Rich markup.

Help texts, store URLs (`zk:host:2181[/chroot]`), file paths, topic names and archive reasons
hold square brackets; Rich would read them as style tags, then drop them silently or crash on
a closing tag it never opened. Styling goes through `Text` instead.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text


def plain_console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, markup=False, highlight=False)


err = plain_console(stderr=True)


def print_error(message: object, console: Console | None = None) -> None:
    """`error: <message>`, the message exactly as given."""
    # Unwrapped: an error line is copied and searched for as a whole.
    (console or err).print(Text.assemble(("error:", "red"), " ", str(message)), soft_wrap=True)
