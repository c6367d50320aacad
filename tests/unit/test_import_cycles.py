"""No package imports in a circle (issue 34: audit/offload/tiered.py -> audit/pipeline.py ->
audit/report/data.py -> audit/offload/tiered.py, hidden behind TYPE_CHECKING). The graph is
grimp's, the one import-linter checks the layers on; imports under TYPE_CHECKING count."""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ["audit", "consumers", "core", "config", "cursor", "deletion", "ledger_janitor",
            "producers", "transport"]  # fmt: skip


def _cycles(graph: grimp.ImportGraph, package: str) -> list[tuple[str, ...]]:
    found = []
    modules = sorted(m for m in graph.modules if m == package or m.startswith(f"{package}."))
    for importer in modules:
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if not imported.startswith(f"{package}.") or imported == importer:
                continue
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                found.append((importer, *back))
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, include_external_packages=False)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_itself_through_others(graph: grimp.ImportGraph, package: str) -> None:
    assert _cycles(graph, package) == []
