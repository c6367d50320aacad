"""bench/mutation.py's own plumbing: the settings it writes for mutmut, the verdicts it reads
back, and the named mutants still matching the code they mutate."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import _mutmut
from bench._named import NAMED, NamedMutant
from bench.mutation import BY_KEY, MODULES, Module

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]


def test_settings_replace_only_the_mutmut_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.mutmut]\nold = ["a",\n  "b"]\n\n[tool.other]\nkept = 1\n'
    )
    settings = {"only_mutate": ["consumers/early.py"], "debug": False, "timeout": 2.5}
    _mutmut.write_settings(tmp_path, {**settings, "quoted": 'a "b" \\c'})
    parsed = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert parsed["tool"]["mutmut"] == {**settings, "quoted": 'a "b" \\c'}
    assert parsed["tool"]["other"] == {"kept": 1}
    assert parsed["project"] == {"name": "x"}


def test_results_are_read_for_the_wanted_mutants_only() -> None:
    listing = "\n".join(
        [
            "    deletion.adapters.stores.zookeeper.x__deleted__mutmut_1: killed",
            "    deletion.adapters.stores.zookeeper.x__deleted__mutmut_2: survived",
            "    deletion.adapters.stores.zookeeper.xǁZooKeeperMetadataStoreǁcreate__mutmut_1:"
            " no tests",
            "    deletion.adapters.stores.zookeeper.xǁZooKeeperMetadataStoreǁdelete__mutmut_3:"
            " timeout",
            "some progress line",
        ]
    )
    statuses = _mutmut._parse_results(listing, BY_KEY["zookeeper"].functions)
    verdicts = _mutmut.Verdicts(statuses)
    assert len(statuses) == 3  # create is not a delete path
    assert verdicts.survivors == ["deletion.adapters.stores.zookeeper.x__deleted__mutmut_2"]
    assert verdicts.count("killed", "timeout") == 2
    assert len(_mutmut._parse_results(listing, ())) == 4  # no patterns: every mutant


def test_a_diff_keeps_its_changed_lines_only() -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-    a = 1\n+    a = 2\n     b = 3\n"
    assert _mutmut._changed_lines(diff) == "-    a = 1\n+    a = 2"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.key)
def test_every_module_and_its_tests_exist(module: Module) -> None:
    assert (REPO / module.path).is_file()
    for test in module.tests:
        assert (REPO / test.split("::")[0]).is_file()


@pytest.mark.parametrize("mutant", NAMED, ids=lambda m: m.name)
def test_named_mutants_still_apply(mutant: NamedMutant) -> None:
    """A snippet that no longer matches would be reported stale, not tested."""
    assert (REPO / mutant.path).read_text().count(mutant.before) == 1
