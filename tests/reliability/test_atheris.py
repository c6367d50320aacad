"""Coverage-guided fuzzing with atheris (a test dependency wherever it ships a wheel): every
decoder for a few seconds by default, each one for a minute with LEDGER_JANITOR_LONG_TESTS=1.
The bounds are fuzzing.py's, read from the kernel (atheris_fuzz.py); libFuzzer's own memory
and time limits stand behind them."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.fuzzing import MALLOC_ENVIRONMENT, TARGETS
from tests.reliability.seeds import seeds
from tests.reliability.support import LONG, REPO, scaled

# Where the test extra installs atheris (see pyproject.toml); elsewhere there is no wheel.
WHEEL = sys.platform == "linux" and platform.machine() == "x86_64" and sys.version_info < (3, 14)
pytestmark = [
    pytest.mark.skipif(not WHEEL, reason="atheris ships no wheel for this platform"),
    pytest.mark.timeout(scaled(120, 300)),
]


def fuzz(target: str, seconds: int, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    # With `all`, an input's first byte picks the decoder (atheris_fuzz.py): each seed for each.
    selectors = [bytes([index]) for index in range(len(TARGETS))] if target == "all" else [b""]
    for number, seed in enumerate(seeds()):
        for selector in selectors:
            (corpus / f"seed-{number}-{selector.hex()}").write_bytes(selector + seed)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.reliability.atheris_fuzz",
            target,
            str(corpus),
            f"-max_total_time={seconds}",
            "-rss_limit_mb=2048",
            "-timeout=10",
            f"-artifact_prefix={tmp_path}/",
        ],
        cwd=REPO,
        env={**os.environ, **MALLOC_ENVIRONMENT},
        capture_output=True,
        text=True,
        timeout=seconds + 120,
    )


def _report(target: str, result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr[-4000:]
    done = [line for line in result.stderr.splitlines() if line.startswith("#") and "DONE" in line]
    assert done, result.stderr[-2000:]  # libFuzzer ran and finished its time
    print(f"\n{target}: {done[-1]}")


def test_atheris_every_decoder(tmp_path: Path) -> None:
    _report("all", fuzz("all", 10, tmp_path))


@pytest.mark.skipif(not LONG, reason="long variant: set LEDGER_JANITOR_LONG_TESTS=1")
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_atheris(target: str, tmp_path: Path) -> None:
    _report(target, fuzz(target, 60, tmp_path))


def test_atheris_finds_native_memory(tmp_path: Path) -> None:
    """The harness itself: a decoder that touches 256 MiB through libc (unseen by tracemalloc)
    is a crash, with the input saved."""
    result = fuzz("native-touches-256mib", 30, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "resident bytes (bound" in output, output[-2000:]
    assert list(tmp_path.glob("crash-*"))
