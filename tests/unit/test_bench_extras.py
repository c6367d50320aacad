"""Every bench the README names runs with what the extra it documents installs (issue 31:
`python -m bench.worker_logging` failed after `pip install '.[embedded]'` with `No module
named 'cryptography'`). Static but real: every import statement of the bench and of the
project modules it imports, transitively (functions' too: the bench calls them), against the
distributions the project's dependencies and that extra install, with their own
dependencies, as the installed metadata lists them."""

from __future__ import annotations

import re
import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tests.unit.bench_imports import ROOT, installed_by, modules_of, third_party_imports

README = (ROOT / "README.md").read_text()
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
BENCHES = sorted(set(re.findall(r"python -m (bench\.[a-z_]+)", README)))
# bench.mutation runs the test suite under mutmut: it needs the tests' extra.
EXTRA = {"bench.mutation": "test"}


def test_the_readme_names_benches_and_the_extra_they_need() -> None:
    assert len(BENCHES) >= 8, BENCHES
    assert "pip install '.[bench]'" in README
    assert "pip install '.[test]'" in README  # for bench.mutation


@pytest.mark.parametrize("bench", BENCHES)
def test_a_bench_imports_only_what_its_extra_installs(bench: str) -> None:
    extra = EXTRA.get(bench, "bench")
    requirements = [*PROJECT["dependencies"], *PROJECT["optional-dependencies"][extra]]
    provided = modules_of(installed_by(requirements))
    needed = third_party_imports(bench)
    missing = {module: by for module, by in needed.items() if module not in provided}
    assert not missing, f"{bench} with '.[{extra}]': {missing} (module: imported by)"


def test_the_bench_extra_holds_nothing_the_benches_do_not_import() -> None:
    """Exactly what bench/ needs beyond the dependencies: each package of the extra is
    imported by some bench the README names."""
    needed = {m for bench in BENCHES if bench not in EXTRA for m in third_party_imports(bench)}
    base = modules_of(installed_by(PROJECT["dependencies"]))
    for requirement in PROJECT["optional-dependencies"]["bench"]:
        assert modules_of(installed_by([requirement])) & (needed - base), requirement
