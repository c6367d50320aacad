"""Mutation testing of the safety core: mutmut 3, one module at a time, each with only its
fast tests (the in-process fakes, SQLite, and one shared real ZooKeeper), plus the
hand-written mutants a reviewer named (bench/_named.py).

    python -m bench.mutation [--json] [--module KEY ...] [--jobs N] [--no-named] [--keep]

Every module runs in its own scratch copy of the project under $TMPDIR, removed at the
end, and the one ZooKeeper server is stopped: nothing is left behind. The score is
detected / all, where detected is killed, timed out or crashed, and all also counts the
survivors and the mutants no selected test reaches ("no tests").
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import console_for, finish, quiet, render
from bench._mutmut import PACKAGES, Verdicts, base_settings, run_mutmut, scratch_copy
from bench._named import NAMED, run_named

STORES = "tests/integration/test_stores.py"
LEDGERS = "tests/integration/test_ledger_storage.py"
RACING = (
    "tests/integration/test_concurrent_delete.py"
    "::test_racing_deletes_of_one_ledger_succeed_exactly_once"
)
ZK_STORE = "deletion.adapters.stores.zookeeper."
ZK_METHOD = ZK_STORE + "xǁZooKeeperMetadataStoreǁ"
METADATA = "deletion.adapters.pulsar_metadata."
ADMIN = "deletion.adapters.admin_api."
ADMIN_HTTP = "transport.admin_http."
HANDLER = ("tests/unit/test_handler.py", "tests/unit/test_handler_batch.py")
DELETER = "tests/unit/test_deleter.py"
# The reference walk, through the worker's in-use reader, on SQLite and a real ZooKeeper.
WALK = ("tests/integration/test_pulsar_metadata.py", "tests/integration/test_metadata_codec.py")


@dataclass(frozen=True)
class Module:
    key: str
    path: str
    tests: tuple[str, ...]
    # mutmut names of the mutants that count (globs); empty: every mutant of the file.
    functions: tuple[str, ...] = ()
    zookeeper: bool = False


MODULES: tuple[Module, ...] = (
    Module(
        "reconsume",
        "consumers/reconsume.py",
        ("tests/unit/test_reconsume.py", "tests/unit/test_reconsume_limits.py", *HANDLER),
    ),
    Module("early", "consumers/early.py", ("tests/unit/test_early_gate.py",)),
    Module(
        "bookkeeper",
        "deletion/adapters/ledgers/bookkeeper.py",
        (STORES, LEDGERS, RACING),
        zookeeper=True,
    ),
    Module(
        "bookkeeper_metadata",
        "deletion/wire/bookkeeper_metadata.py",
        ("tests/unit/test_bookkeeper_metadata.py", STORES, LEDGERS),
        zookeeper=True,
    ),
    Module(
        "zookeeper",
        "deletion/adapters/stores/zookeeper.py",
        (STORES, LEDGERS, RACING),
        functions=tuple(
            f"{ZK_STORE}x_{name}__mutmut_*"
            for name in ("_translated", "_stat", "_read", "_deleted", "_settle")
        )
        + tuple(
            f"{ZK_METHOD}{name}__mutmut_*" for name in ("get", "get_many", "delete", "delete_many")
        ),
        zookeeper=True,
    ),
    Module(
        "decision",
        "deletion/domain/decision.py",
        (
            "tests/unit/test_decision.py",
            "tests/unit/test_decision_creators.py",
            "tests/unit/test_decision_offload.py",
            "tests/unit/test_ownership.py",
            *HANDLER,
        ),
    ),
    Module("kinds", "deletion/domain/kinds.py", ("tests/unit/test_decision_kinds.py",)),
    Module("in_use", "deletion/domain/in_use.py", ("tests/unit/test_in_use_cache.py", *HANDLER)),
    Module("references", "deletion/domain/references.py", WALK, zookeeper=True),
    Module(
        "pulsar_metadata",
        "deletion/adapters/pulsar_metadata.py",
        WALK,
        # The writers only plant fixtures; the in-use adapter is what the worker trusts.
        functions=(f"{METADATA}xǁMetadataInUseLedgersǁ*__mutmut_*",),
        zookeeper=True,
    ),
    Module(
        "admin",
        "deletion/adapters/admin_api.py",
        ("tests/integration/test_admin_api.py", "tests/integration/test_admin_api_transport.py"),
        # What the snapshot is made of: the answer's parsing, 404s, redirects, errors. Not
        # the constructor's settings checks, repr or TLS set-up (trust_env is a named mutant).
        functions=tuple(
            f"{ADMIN}x_{name}__mutmut_*"
            for name in ("_snapshot", "_as", "_longs", "_long", "rest_path")
        )
        + tuple(
            f"{ADMIN}xǁAdminApiInUseLedgersǁ{name}__mutmut_*"
            for name in (
                "fetch",
                "_schema_ledgers",
                "fetch_partitioned",
                "_get",
                "_payload",
                "_reason",
            )
        ),
    ),
    Module(
        "admin_http",
        "transport/admin_http.py",
        (
            "tests/integration/test_admin_http.py",
            "tests/integration/test_admin_api.py",
            "tests/integration/test_admin_api_transport.py",
            "tests/integration/test_topic_setup.py",
        ),
        # Redirects, errors and reasons; not the constructor's settings checks or TLS set-up.
        functions=(
            *(
                f"{ADMIN_HTTP}xǁAdminHttpǁ{name}__mutmut_*"
                for name in ("request", "_send", "reason")
            ),
            f"{ADMIN_HTTP}x__redirect_method__mutmut_*",
        ),
    ),
    Module("deleter", "deletion/domain/deleter.py", (*HANDLER, DELETER)),
    Module("received", "consumers/received.py", HANDLER),
    Module(
        "archive",
        "consumers/archive.py",
        ("tests/unit/test_archive_drain_order.py", "tests/integration/test_archive_drain.py"),
        # What a drain does with each archived message (listing and subscribing aside).
        functions=tuple(
            f"consumers.archive.xǁArchiveDrainǁ{name}__mutmut_*"
            for name in ("_settle", "_rearchive")
        ),
    ),
)
BY_KEY = {module.key: module for module in MODULES}


@dataclass
class ModuleResult:
    module: Module
    verdicts: Verdicts
    named: dict[str, str]
    seconds: float

    def figures(self) -> dict[str, Any]:
        v = self.verdicts
        detected = v.count("killed", "timeout", "segfault", "caught by type check")
        total = len(v.statuses)
        return {
            "path": self.module.path,
            "mutants": total,
            "killed": v.count("killed"),
            "timeout": v.count("timeout"),
            "survived": v.count("survived"),
            "no_tests": v.count("no tests"),
            "other": total - detected - v.count("survived", "no tests"),
            "detected": detected,
            "score": detected / total if total else 1.0,
            "survivors": [
                {"name": n, "status": v.statuses[n], "diff": v.diffs.get(n, "")}
                for n in v.survivors
            ],
            "named": self.named,
            "seconds": round(self.seconds, 1),
        }


@contextmanager
def shared_zookeeper(root: Path, needed: bool) -> Iterator[str | None]:
    """One real ZooKeeper for every forked test run (each test has its own chroot)."""
    if not needed:
        yield None
        return
    from harness.zookeeper import ZooKeeperServer

    server = ZooKeeperServer(root / "zookeeper").start()
    try:
        yield server.hosts
    finally:
        server.stop()


def measure(
    module: Module, root: Path, jobs: int, named: bool, zk: str | None, keep: bool
) -> ModuleResult:
    started = time.monotonic()
    scratch = scratch_copy(root / module.key, root / "snapshot")
    try:
        mutants = [m for m in NAMED if m.module == module.key] if named else []
        named_verdicts = run_named(mutants, scratch, zk if module.zookeeper or mutants else None)
        settings = {
            **base_settings(root / "snapshot"),
            "source_paths": list(PACKAGES),
            "only_mutate": [module.path],
            "pytest_add_cli_args_test_selection": list(module.tests),
        }
        verdicts = run_mutmut(scratch, settings, module.functions, jobs, zk)
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return ModuleResult(module, verdicts, named_verdicts, time.monotonic() - started)


def report(results: Sequence[ModuleResult], seconds: float, as_json: bool) -> dict[str, Any]:
    console = console_for(as_json)
    figures = {r.module.key: r.figures() for r in results}
    columns = ["killed", "timeout", "survived", "no_tests", "other"]
    rows = [
        [key, f["mutants"], *(f[c] for c in columns), f"{f['score']:.1%}", f["seconds"]]
        for key, f in figures.items()
    ]
    totals = {c: sum(f[c] for f in figures.values()) for c in ["mutants", "detected", *columns]}
    score = totals["detected"] / totals["mutants"] if totals["mutants"] else 1.0
    rows.append(["all", totals["mutants"], *(totals[c] for c in columns), f"{score:.1%}", seconds])
    render(
        "Mutation testing (mutmut)", ["module", "mutants", *columns, "score", "s"], rows, console
    )
    for key, f in figures.items():
        for survivor in f["survivors"]:
            heading = f"{survivor['name']} ({key}, {survivor['status']})"
            console.print(heading, style="bold", highlight=False, markup=False)
            console.print(survivor["diff"] or "(no diff)", highlight=False, markup=False)
    named = [[r.module.key, name, v] for r in results for name, v in r.named.items()]
    if named:
        render("Named mutants", ["module", "mutant", "verdict"], named, console)
    return finish(
        {"bench": "mutation", "modules": figures, **totals, "score": score, "seconds": seconds},
        as_json,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args_parser = argparse.ArgumentParser(
        prog="python -m bench.mutation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    args_parser.add_argument("--json", action="store_true", help="end with one JSON object")
    args_parser.add_argument(
        "--module", action="append", choices=sorted(BY_KEY), help="only these (repeatable)"
    )
    args_parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once")
    args_parser.add_argument("--no-named", action="store_true", help="skip the named mutants")
    args_parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = args_parser.parse_args(argv)
    modules = [BY_KEY[key] for key in args.module] if args.module else list(MODULES)
    quiet()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="ledger-janitor-mutation-"))
    results = []
    try:
        # Every module is measured on the tree as it was when the run began.
        scratch_copy(root / "snapshot")
        with shared_zookeeper(root, any(m.zookeeper for m in modules) or not args.no_named) as zk:
            for module in modules:
                results.append(measure(module, root, args.jobs, not args.no_named, zk, args.keep))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    report(results, round(time.monotonic() - started, 1), args.json)
    failed = [v for r in results for v in r.named.values() if v in ("survived", "error")]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
