"""The one `--set KEY=VALUE` parser every command shares."""

from __future__ import annotations

import pytest
import typer

from ledger_janitor.commands.options import parse_settings


def test_settings_become_overrides_the_last_one_winning() -> None:
    parsed = parse_settings(["a=1", " b = two words ", "url=zk:h:2181/x=y", "a=3", "empty="])
    assert parsed == {"a": "3", "b": "two words", "url": "zk:h:2181/x=y", "empty": ""}


def test_a_setting_without_equals_names_the_option() -> None:
    with pytest.raises(typer.BadParameter, match="'oops' is not KEY=VALUE") as raised:
        parse_settings(["a=1", "oops"])
    assert raised.value.param_hint == "--set"
