"""Running mutmut 3 on one module in a scratch copy of the project, and reading its verdicts.

mutmut 3 copies the code to `mutants/` in the directory it runs in and takes its settings
from that directory's pyproject.toml. Each module gets its own scratch copy, so that its
settings (which file, which tests) are its own, and nothing lands in the work tree.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
# The top-level packages tests import (not a src layout): every one is copied, one mutated.
PACKAGES = (
    "core",
    "transport",
    "config",
    "deletion",
    "producers",
    "consumers",
    "cursor",
    "audit",
    "ledger_janitor",
)
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")
EXTERNAL_ZOOKEEPER_ENV = "LEDGER_JANITOR_TEST_ZOOKEEPER"
# mutmut's verdicts, as `mutmut results --all true` prints them.
DETECTED = frozenset({"killed", "timeout", "segfault", "caught by type check"})
RESULT_LINE = re.compile(r"^\s+(?P<name>\S+): (?P<status>.+)$")


@dataclass
class Verdicts:
    """How each mutant of one module ended."""

    statuses: dict[str, str] = field(default_factory=dict)
    diffs: dict[str, str] = field(default_factory=dict)

    def count(self, *statuses: str) -> int:
        return sum(1 for status in self.statuses.values() if status in statuses)

    @property
    def survivors(self) -> list[str]:
        return sorted(n for n, s in self.statuses.items() if s not in DETECTED)


def scratch_copy(root: Path, source: Path = REPO) -> Path:
    """The packages, the tests, their harness and pyproject.toml of `source`, under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for package in (*PACKAGES, "harness", "tests"):
        shutil.copytree(source / package, root / package, ignore=IGNORED)
    shutil.copy2(source / "pyproject.toml", root / "pyproject.toml")
    return root


def test_environment(scratch: Path, zookeeper: str | None) -> dict[str, str]:
    """Imports from the scratch copy only; temporary files inside it; the shared ZooKeeper."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(scratch)
    env["TMPDIR"] = str(scratch / "tmp")
    (scratch / "tmp").mkdir(exist_ok=True)
    env.pop("MUTANT_UNDER_TEST", None)
    if zookeeper:
        env[EXTERNAL_ZOOKEEPER_ENV] = zookeeper
    else:
        env.pop(EXTERNAL_ZOOKEEPER_ENV, None)
    return env


def base_settings(source: Path = REPO) -> dict[str, object]:
    with (source / "pyproject.toml").open("rb") as f:
        settings: dict[str, object] = tomllib.load(f)["tool"]["mutmut"]
    return settings


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def write_settings(scratch: Path, settings: Mapping[str, object]) -> None:
    """Replace the copy's [tool.mutmut] table with `settings`."""
    pyproject = scratch / "pyproject.toml"
    lines = pyproject.read_text().splitlines()
    kept: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("["):
            inside = line.strip() == "[tool.mutmut]"
        if not inside:
            kept.append(line)
    kept += ["", "[tool.mutmut]", *(f"{k} = {_toml_value(v)}" for k, v in settings.items())]
    pyproject.write_text("\n".join(kept) + "\n")


def _mutmut() -> str:
    beside = Path(sys.executable).with_name("mutmut")
    found = str(beside) if beside.exists() else shutil.which("mutmut")
    if found is None:
        raise SystemExit("mutmut is not installed: pip install -e '.[test]'")
    return found


def run_group(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path, timeout: float | None = None
) -> int:
    """Run a command in its own process group, output to `log`; on any exit (a time-out,
    an interrupt), nothing it started lives on."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            return -signal.SIGALRM
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            _reap_group(process.pid)


def _call(args: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path) -> int:
    return run_group([_mutmut(), *args], cwd, env, log)


def _group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def _reap_group(pgid: int) -> None:
    """Forked test runs that outlived mutmut (a killed run's children) go too. While any
    member lives, the group id cannot be reused, so whatever is in it is ours."""
    if _group_members(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def run_mutmut(
    scratch: Path,
    settings: Mapping[str, object],
    patterns: Sequence[str],
    jobs: int,
    zookeeper: str | None,
) -> Verdicts:
    """mutmut run (only the mutants `patterns` name), then every verdict and survivor diff."""
    write_settings(scratch, settings)
    env = test_environment(scratch, zookeeper)
    log = scratch / "mutmut.log"
    code = _call(["run", "--max-children", str(jobs), *patterns], scratch, env, log)
    if code != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"mutmut run failed with {code}:\n{tail}")
    listing = scratch / "results.txt"
    listing.unlink(missing_ok=True)
    if _call(["results", "--all", "true"], scratch, env, listing) != 0:
        raise RuntimeError(f"mutmut results failed: {listing.read_text()[-2000:]}")
    verdicts = Verdicts(statuses=_parse_results(listing.read_text(), patterns))
    for name in verdicts.survivors:
        shown = scratch / "show.txt"
        shown.unlink(missing_ok=True)
        _call(["show", name], scratch, env, shown)
        verdicts.diffs[name] = _changed_lines(shown.read_text(errors="replace"))
    return verdicts


def _parse_results(text: str, patterns: Iterable[str]) -> dict[str, str]:
    wanted = list(patterns)
    statuses: dict[str, str] = {}
    for line in text.splitlines():
        match = RESULT_LINE.match(line)
        if match is None:
            continue
        name = match["name"]
        if not wanted or any(fnmatch.fnmatchcase(name, p) for p in wanted):
            statuses[name] = match["status"].strip()
    return statuses


def _changed_lines(diff: str) -> str:
    """The - and + lines of a unified diff, without its headers."""
    changed = [
        line.rstrip()
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return "\n".join(changed)
