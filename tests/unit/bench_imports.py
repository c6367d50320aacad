"""What a module needs installed: the third-party top-level modules its import statements
name, and those of every project module it imports, transitively; and what a set of
requirements installs. Read from the sources and the installed distributions' metadata."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
# The repository's own top-level packages: followed, never counted as third-party.
OURS = frozenset(
    p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and not p.name.startswith(".")
)


def _source(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


def _statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement that may run, functions' included; not `if TYPE_CHECKING:` blocks,
    only the branch of an `if sys.version_info ...` this interpreter takes, and not the
    body of a `try` whose ImportError is handled (an optional import)."""
    for node in body:
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if test in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                yield from _statements(node.orelse)
                continue
            if test.startswith("sys.version_info"):
                taken = eval(compile(ast.Expression(node.test), "<test>", "eval"), {"sys": sys})
                yield from _statements(node.body if taken else node.orelse)
                continue
        if isinstance(node, ast.Try) and any(_falls_back(h) for h in node.handlers):
            yield from _statements(node.orelse + node.finalbody)
            for handler in node.handlers:
                yield from _statements(handler.body)
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _statements(x for x in inner if isinstance(x, ast.stmt))
            if field == "handlers" and inner:
                for handler in inner:
                    yield from _statements(handler.body)


def _falls_back(handler: ast.ExceptHandler) -> bool:
    """An `except ImportError:` that carries on without the module (one that raises, as
    `find_binary` does with an install hint, still needs it)."""
    caught = ast.unparse(handler.type) if handler.type else ""
    if not re.search(r"\b(ImportError|ModuleNotFoundError)\b", caught):
        return False
    return not any(isinstance(n, ast.Raise) for n in ast.walk(ast.Module(handler.body, [])))


def _imported(module: str, node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if _source(module) and _source(module).name != "__init__.py":  # type: ignore[union-attr]
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


@cache
def third_party_imports(start: str) -> dict[str, str]:
    """Third-party top-level module -> a project module that imports it."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    pending = [start]
    while pending:
        module = pending.pop()
        source = _source(module)
        if module in seen or source is None:
            continue
        seen.add(module)
        for node in _statements(ast.parse(source.read_text()).body):
            for name in _imported(module, node):
                top = name.split(".")[0]
                if top in OURS:
                    parts = name.split(".")
                    pending += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
                elif top and top not in sys.stdlib_module_names:
                    found.setdefault(top, module)
    return found


def _name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def installed_by(requirements: Iterable[str]) -> set[str]:
    """The distributions these requirements install, their own dependencies included, as
    this interpreter's markers select them (normalised names)."""
    found: set[str] = set()
    pending = [(Requirement(r), "") for r in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = _name(requirement.name)
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in found:
            continue
        found.add(key)
        found.add(name)
        requires = metadata.requires(requirement.name) or []
        for wanted in ("", *requirement.extras):
            pending += [(Requirement(r), wanted) for r in requires]
    return {name for name in found if "[" not in name}


def modules_of(distributions: set[str]) -> set[str]:
    """The top-level modules those installed distributions provide."""
    return {
        module
        for module, owners in metadata.packages_distributions().items()
        if any(_name(owner) in distributions for owner in owners)
    }
