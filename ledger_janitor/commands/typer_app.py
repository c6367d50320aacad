"""The command line's Typer apps, all set up one way, and the one way they report errors.

The error contract (README): every failure is ONE line on stderr, `error: <what>`, and exit
code 2 — our own errors (JanitorError), usage errors (an unknown option, a bad value), and
anything else that escapes a command (an OSError, a bug: then the line names the exception;
LEDGER_JANITOR_TRACEBACK=1 adds the traceback). Errors are handled inside the command, group
and entry point, so that typer's test runner sees exactly what a shell sees.

Help: `-h` is `--help` everywhere; placeholders read as words (`TOPIC LEDGER_IDS...`,
`--wait SECONDS`, `-c, --config FILE`), never typer's `<list[int]>`, `<float range>` or `{topic}`.
Help texts are shown as written (`rich_markup_mode=None`: they hold [brackets]).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_args

import typer
from typer import _click as click  # typer's own copy of click: its exceptions are these
from typer._click import exceptions as click_errors
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from core.errors import JanitorError
from ledger_janitor.commands.console import print_error

ERROR_EXIT_CODE = 2
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
TRACEBACK_ENV = "LEDGER_JANITOR_TRACEBACK"
# Exceptions that are click's own control flow, never errors of ours to report.
_CLICK_FLOW = (click_errors.ClickException, typer.Exit, typer.Abort)


def one_line(text: str) -> str:
    return " ".join(text.split("\n")).strip()


@contextmanager
def reported_errors() -> Iterator[None]:
    try:
        yield
    except _CLICK_FLOW:
        raise
    except JanitorError as exc:
        print_error(one_line(str(exc)))
        raise typer.Exit(ERROR_EXIT_CODE) from None
    except Exception as exc:
        # Not ours (an OSError from the system, or a bug): still one line, named by its type.
        if os.environ.get(TRACEBACK_ENV):
            traceback.print_exc()
        detail = one_line(str(exc))
        print_error(f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__)
        raise typer.Exit(ERROR_EXIT_CODE) from None


def usage_error_line(exc: click_errors.ClickException) -> str:
    """A usage error as one line: click's message, then where to find help."""
    # Typer words a bad choice as a validator's error: "Value error, 'X' is not one of ...".
    message = one_line(exc.format_message()).replace(": Value error, ", ": ")
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return message


def _run_main(main: Callable[..., Any], standalone_mode: bool, **kwargs: Any) -> Any:
    """Click's main, with usage errors as one `error:` line and exit code 2."""
    try:
        result = main(standalone_mode=False, **kwargs)
    except click_errors.NoArgsIsHelpError as exc:
        # A group called bare: its help, as click prints it.
        exc.show()
        code = exc.exit_code
    except click_errors.ClickException as exc:
        print_error(usage_error_line(exc))
        code = ERROR_EXIT_CODE
    except typer.Abort:
        print_error("aborted")
        code = 1
    else:
        # Without standalone mode click returns an Exit's code, or the command's None.
        code = result if isinstance(result, int) else 0
        if not standalone_mode:
            return result
    if not standalone_mode:
        return code
    sys.exit(code)


def placeholder(param: click.Parameter, ctx: click.Context) -> str:
    """A readable word for the value a parameter takes."""
    if param.metavar:
        return param.metavar
    if isinstance(param, TyperArgument):
        return (param.name or "value").upper()
    if not isinstance(param, TyperOption):
        return "VALUE"
    desc = param.type_descriptor
    if desc.is_choice:
        return "[" + param.display_type(ctx).strip("<>") + "]"
    annotation = desc.annotation
    if desc.is_list and get_args(annotation):
        annotation = get_args(annotation)[0]
    if desc.is_path or annotation is Path:
        return "PATH"
    if annotation is int:
        return "N"
    if annotation is float:
        return "NUMBER"
    return "TEXT"


def _repeats(param: click.Parameter) -> str:
    return "..." if getattr(param, "nargs", 1) != 1 else ""


class ReadableHelp(TyperCommand):
    """Help and usage lines with `placeholder`s instead of typer's type labels."""

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                word = placeholder(param, ctx)
                pieces.append((word if param.required else f"[{word}]") + _repeats(param))
        return pieces

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            names, help_text = record
            if isinstance(param, TyperArgument):
                sections["Arguments"].append((placeholder(param, ctx) + _repeats(param), help_text))
                continue
            if isinstance(param, TyperOption) and not (param.is_flag or param.count):
                label = param.display_type_rich(ctx) or ""
                if label and names.endswith(" " + label):
                    names = names.removesuffix(label) + placeholder(param, ctx) + _repeats(param)
            sections["Options"].append((names, help_text))
        for title, rows in sections.items():
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class ReportingCommand(ReadableHelp):
    """A command: readable help, errors reported by `reported_errors`, also when run alone."""

    def invoke(self, ctx: Any) -> Any:
        with reported_errors():
            return super().invoke(ctx)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        return _run_main(
            super().main, standalone_mode, args=args, prog_name=prog_name,
            complete_var=complete_var, windows_expand_args=windows_expand_args, **extra,
        )  # fmt: skip


class ReportingGroup(TyperGroup):
    """A command group whose commands' errors are reported by `reported_errors`."""

    def invoke(self, ctx: Any) -> Any:  # click's Context: typer vendors its own click
        with reported_errors():
            return super().invoke(ctx)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        return _run_main(
            super().main, standalone_mode, args=args, prog_name=prog_name,
            complete_var=complete_var, windows_expand_args=windows_expand_args, **extra,
        )  # fmt: skip


class JanitorTyper(typer.Typer):
    """A Typer app whose commands are `ReportingCommand`s unless told otherwise."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", ReportingCommand)
        return super().command(*args, **kwargs)


def command_group(help: str | None = None, **options: Any) -> typer.Typer:
    """A group of commands: without arguments it prints its help."""
    return JanitorTyper(
        cls=ReportingGroup,
        rich_markup_mode=None,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings=HELP_OPTIONS,
        **options,
    )
