"""Shared helpers of the configuration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import (
    load_configuration,
)
from core.errors import ConfigurationError

SEND_DELAY = "sendDelaySecondsOfTwoPhaseDeletion"


SEND_DELAY_ENV = "LEDGER_JANITOR_SEND_DELAY_SECONDS_OF_TWO_PHASE_DELETION"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "janitor.properties"
    path.write_text(text, encoding="utf-8")
    return path


def load_error(
    properties_file: Path | None = None,
    environ: dict[str, str] | None = None,
    overrides: dict[str, str] | None = None,
) -> str:
    with pytest.raises(ConfigurationError) as info:
        load_configuration(properties_file, environ or {}, overrides or {})
    return str(info.value)
