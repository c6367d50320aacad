"""Long variant only (LEDGER_JANITOR_LONG_TESTS=1): a minute of coverage-guided fuzzing per
decoder with atheris, under libFuzzer's own memory and time limits."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from .fuzzing import TARGETS
from .support import LONG, REPO

pytestmark = [
    pytest.mark.skipif(not LONG, reason="long variant: set LEDGER_JANITOR_LONG_TESTS=1"),
    pytest.mark.skipif(
        importlib.util.find_spec("atheris") is None, reason="atheris is not installed"
    ),
    pytest.mark.timeout(300),
]
SECONDS = 60


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_atheris(target: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.reliability.atheris_fuzz",
            target,
            str(corpus),
            f"-max_total_time={SECONDS}",
            "-rss_limit_mb=2048",
            "-timeout=10",
            f"-artifact_prefix={tmp_path}/",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SECONDS + 120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    stats = [line for line in result.stderr.splitlines() if line.startswith("Done")]
    print(f"\n{target}: {stats[-1] if stats else result.stderr[-300:]}")
