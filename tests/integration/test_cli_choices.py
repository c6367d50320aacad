"""Options that take one of a fixed set of values (issue 31): an unknown value is refused
before anything runs, in one `error:` line that lists the valid ones, with exit code 2.
`archive drain --component BOGUS` used to say "nothing to drain" and exit 0."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import pytest
import typer.main

from harness.process import run_cli
from ledger_janitor.cli import app

# Each option with a fixed set of values, and a command line it is refused on.
CASES: dict[tuple[str, str], tuple[str, ...]] = {
    ("enqueue", "--component"): ("enqueue", "a/b/t", "1"),
    ("enqueue", "--kind"): ("enqueue", "a/b/t", "1"),
    ("archive drain", "--component"): ("archive", "drain", "-n", "a/b", "--dry-run"),
    ("cursor decode", "--kind"): ("cursor", "decode", "{file}"),
    ("cursor encode", "--kind"): ("cursor", "encode", "{file}", "-o", "{out}"),
    ("cursor encode", "--ranges"): ("cursor", "encode", "{file}", "-o", "{out}"),
    ("cursor encode", "--compression"): ("cursor", "encode", "{file}", "-o", "{out}"),
}


def choice_options() -> dict[tuple[str, str], list[str]]:
    """(command, option) -> its valid values, for every option of every command whose values
    are an enumeration."""
    found: dict[tuple[str, str], list[str]] = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, (*path, name))
        for param in getattr(command, "params", []):
            annotation = param.type_descriptor.annotation
            if isinstance(annotation, type) and issubclass(annotation, Enum):
                found[(" ".join(path), param.opts[0])] = [str(m.value) for m in annotation]

    walk(typer.main.get_command(app), ())
    return found


def test_every_option_with_a_set_of_values_is_checked_here() -> None:
    """A new enumerated option joins CASES; a free-text one that names a set of values (as
    `archive drain --component` did) is not one: it must become one."""
    assert set(choice_options()) == set(CASES)


@pytest.mark.parametrize(("command", "option"), list(CASES))
def test_an_unknown_value_is_one_error_line_listing_the_valid_ones(
    command: str, option: str, tmp_path: Path
) -> None:
    given = tmp_path / "given"
    given.write_bytes(b"{}")
    args = [a.format(file=given, out=tmp_path / "out") for a in CASES[(command, option)]]
    # Refused before anything is read or reached (the default store would be in tmp_path).
    refused = run_cli(*args, option, "BOGUS", cwd=tmp_path)
    assert refused.returncode == 2, refused
    assert refused.stdout == ""
    assert refused.stderr.count("\n") == 1, refused.stderr
    line = refused.stderr
    assert line.startswith(f"error: Invalid value for '{option}': 'BOGUS' is not one of "), line
    for value in choice_options()[(command, option)]:
        assert f"'{value}'" in line, (value, line)
    assert "Value error" not in line and "nothing to drain" not in line
