"""The image's install step without Docker: copy what the Dockerfile copies, build the wheel
from it, install it into a fresh virtual environment, and run every command from there.

The environment sees the installed dependencies through a path file added after the install,
never this checkout (nor its editable install), so a package or data file the wheel lacks
fails here as it would in the image.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PACKAGES = [p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
DATA_SUFFIXES = (".avsc", ".proto", ".pyi", "py.typed", ".j2")


def dockerfile_copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of each COPY before the install step, relative to WORKDIR."""
    copies = []
    for line in (REPO / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["RUN"] and "install" in words:
            break
        if words[:1] == ["COPY"]:
            args = [w for w in words[1:] if not w.startswith("--")]
            copies.append((args[:-1], args[-1]))
    return copies


def build_context(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")
    for sources, destination in dockerfile_copies():
        for source in sources:
            origin = REPO / source
            into = target / destination
            if destination.endswith("/") or len(sources) > 1:
                into = into / origin.name
            if origin.is_dir():
                shutil.copytree(origin, into, ignore=ignore)
            else:
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, into)


def source_files() -> tuple[set[str], set[str]]:
    """The packages (dotted) and data files (paths) the wheel must hold."""
    packages, data = set(), set()
    for top in PACKAGES:
        for init in (REPO / top).rglob("__init__.py"):
            packages.add(".".join(init.parent.relative_to(REPO).parts))
        for path in (REPO / top).rglob("*"):
            if path.is_file() and path.name.endswith(DATA_SUFFIXES):
                data.add(path.relative_to(REPO).as_posix())
    return packages, data


def test_the_dockerfile_copies_every_package_the_wheel_is_built_from() -> None:
    copied = {source for sources, _ in dockerfile_copies() for source in sources}
    assert {"pyproject.toml", "README.md"} <= copied
    assert set(PACKAGES) <= copied, f"the Dockerfile does not copy {set(PACKAGES) - copied}"


def test_every_package_has_its_type_marker() -> None:
    assert [top for top in PACKAGES if not (REPO / top / "py.typed").exists()] == []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment holding the wheel built from the image's build context."""
    root = tmp_path_factory.mktemp("wheel")
    context, dist, venv = root / "app", root / "dist", root / "venv"
    build_context(context)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    # Offline: the setuptools already installed builds it, as pip would in the image.
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(context)],
        check=True,
        cwd=root,
        timeout=120,
    )
    # The environment's own pip (ensurepip works offline) installs into it and nowhere else;
    # an outer pip told `--python` may find this project installed already and do nothing.
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    (wheel,) = dist.glob("*.whl")
    installing = [str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install"]
    subprocess.run(
        [*installing, "--no-deps", "--no-index", str(wheel)],
        check=True,
        cwd=root,
        env={k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))},
        timeout=120,
    )
    # Only now the dependencies: a path file names the directories that hold them.
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dependencies = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_dependencies.pth").write_text("\n".join(sorted(dependencies)) + "\n")
    return root


def in_venv(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,  # not the checkout: nothing may be imported from it
        env={**env, "COLUMNS": "100", "PATH": f"{root / 'venv' / 'bin'}:{env['PATH']}"},
    )


def test_the_wheel_holds_every_package_and_data_file(installed: Path) -> None:
    (wheel,) = (installed / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packages, data = source_files()
    missing_packages = {p for p in packages if p.replace(".", "/") + "/__init__.py" not in names}
    assert missing_packages == set()
    assert data - names == set()
    assert not any(name.startswith(("tests/", "bench/", "harness/")) for name in names)


CHECK = textwrap.dedent(
    """
    import importlib, json, sys, typer
    from typer.testing import CliRunner
    tops = json.loads(sys.argv[1])
    where = {top: importlib.import_module(top).__file__ for top in tops}
    from deletion.domain import message
    from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
    from deletion.domain.topics import TopicName
    from ledger_janitor.cli import app
    info = PendingDeleteLedgerInfo(
        TopicName.parse("public/default/t"), LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, 5
    )
    assert message.decode(message.encode(info)) == info  # the packaged Avro schema
    from audit.report.page import ReportData, render
    assert render(ReportData(0, 0, (), ())).startswith("<!DOCTYPE html>")  # the packaged template
    paths, failed = [()], {}
    def walk(command, prefix):
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            paths.append((*prefix, name))
            walk(sub, (*prefix, name))
    walk(typer.main.get_command(app), ())
    for path in paths:
        result = CliRunner().invoke(app, [*path, "--help"])
        if result.exit_code != 0 or "Usage:" not in result.stdout:
            failed[" ".join(path)] = result.output + repr(result.exception)
    print(json.dumps({"where": where, "helped": len(paths), "failed": failed}))
    """
)


def test_every_command_runs_from_the_installed_wheel(installed: Path) -> None:
    checked = in_venv(installed, "python", "-c", CHECK, json.dumps(PACKAGES))
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    site = installed / "venv" / "lib"
    assert all(Path(f).is_relative_to(site) for f in report["where"].values()), report["where"]
    assert report["failed"] == {}
    assert report["helped"] >= 14
    # The console script the image's ENTRYPOINT names.
    version = in_venv(installed, "ledger-janitor", "--version")
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(rf"ledger-janitor {PYPROJECT['project']['version']}\n", version.stdout)
    shown = in_venv(installed, "ledger-janitor", "config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "metadataStoreUrl=sqlite:ledger-janitor.db  (default)" in shown.stdout
    # The audit runs through ledger_janitor.entry's own group.
    audit = in_venv(installed, "ledger-janitor", "audit", "--help")
    assert audit.returncode == 0, audit.stderr
    assert audit.stdout.startswith("Usage: ledger-janitor audit [OPTIONS]")
