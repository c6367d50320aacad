"""The command line's Typer apps, all set up one way, and the one way they report our errors.

Help texts are shown as written (`rich_markup_mode=None`: they hold [brackets]); a
JanitorError becomes one `error:` line and exit code 2, handled inside the command or group
so that typer's test runner sees exactly what a shell sees.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from core.errors import JanitorError
from ledger_janitor.console import print_error

ERROR_EXIT_CODE = 2


@contextmanager
def reported_errors() -> Iterator[None]:
    try:
        yield
    except JanitorError as exc:
        print_error(exc)
        raise typer.Exit(ERROR_EXIT_CODE) from None


class ReportingGroup(TyperGroup):
    """A command group whose commands' errors are reported by `reported_errors`."""

    def invoke(self, ctx: Any) -> Any:  # click's Context: typer vendors its own click
        with reported_errors():
            return super().invoke(ctx)


class ReportingCommand(TyperCommand):
    """A command run on its own (not in a group), its errors reported by `reported_errors`."""

    def invoke(self, ctx: Any) -> Any:
        with reported_errors():
            return super().invoke(ctx)


def command_group(help: str | None = None, **options: Any) -> typer.Typer:
    """A group of commands: without arguments it prints its help."""
    return typer.Typer(
        cls=ReportingGroup,
        rich_markup_mode=None,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        **options,
    )
