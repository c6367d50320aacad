"""The load harness (harness/load.py) runs the command, gives its exit code, says the load it
met, and leaves no spinner running."""

from __future__ import annotations

import multiprocessing

import pytest

from harness.load import main


def test_the_command_s_exit_code_and_no_spinner_left(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--spinners", "2", "--", "sh", "-c", "exit 7"]) == 7
    assert multiprocessing.active_children() == []
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith("load: 2 spinners on ") and "1-min load average mean" in said


def test_no_command_is_refused() -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--spinners", "1"])
    assert refused.value.code == 2
