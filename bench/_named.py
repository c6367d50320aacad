"""Hand-written mutants: the faults a reviewer named that mutmut's operators cannot make
(reordering statements, dropping a call, making a branch dead). Each is applied to a
scratch copy and its tests must fail; a snippet that no longer matches is reported stale."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench._mutmut import run_group, test_environment

PYTEST = ("-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")


@dataclass(frozen=True)
class NamedMutant:
    module: str  # the key of the module it belongs to in bench.mutation.MODULES
    name: str
    path: str
    before: str
    after: str
    tests: tuple[str, ...]


RETRY_SEND_THEN_ACK = """        future.result(timeout=self._policy.send_timeout_seconds)
        consumer.acknowledge(message)
        return None"""

HANDLER = ("tests/unit/test_handler.py", "tests/unit/test_handler_batch.py")
DELETER = "tests/unit/test_deleter.py"
WALK = ("tests/integration/test_pulsar_metadata.py", "tests/integration/test_metadata_codec.py")
OWNERSHIP_THEN_AGE = """        if record is not None:
            refused = check_ownership(info, record)
"""

NAMED: tuple[NamedMutant, ...] = (
    NamedMutant(
        "reconsume",
        "ack before the retry send succeeds",
        "consumers/reconsume.py",
        RETRY_SEND_THEN_ACK,
        """        consumer.acknowledge(message)
        future.result(timeout=self._policy.send_timeout_seconds)
        return None""",
        ("tests/unit/test_reconsume.py", "tests/unit/test_reconsume_limits.py"),
    ),
    NamedMutant(
        "reconsume",
        "retry send not awaited",
        "consumers/reconsume.py",
        RETRY_SEND_THEN_ACK,
        """        consumer.acknowledge(message)
        return None""",
        ("tests/unit/test_reconsume.py", "tests/unit/test_reconsume_limits.py"),
    ),
    NamedMutant(
        "reconsume",
        "archive send not awaited",
        "consumers/reconsume.py",
        """        future.result(timeout=self._policy.send_timeout_seconds)

    @staticmethod""",
        """
    @staticmethod""",
        ("tests/unit/test_reconsume.py", "tests/unit/test_reconsume_limits.py"),
    ),
    NamedMutant(
        "early",
        "the early gate made a no-op (worker)",
        "consumers/worker.py",
        "            if arrival.due <= now:\n",
        "            if True:\n",
        (
            "tests/integration/test_worker.py::test_an_early_message_is_held_until_due_by_the_worker_clock",
        ),
    ),
    NamedMutant(
        "early",
        "the early gate releases everything held",
        "consumers/early.py",
        "while self._heap and self._heap[0][0] <= now:",
        "while self._heap:",
        ("tests/unit/test_early_gate.py",),
    ),
    NamedMutant(
        "bookkeeper",
        "delete ignoring the version read (one ledger)",
        "deletion/adapters/ledgers/bookkeeper.py",
        "return self._store.delete(self._path(ledger_id), expected_version)",
        "return self._store.delete(self._path(ledger_id))",
        ("tests/integration/test_stores.py", "tests/integration/test_ledger_storage.py"),
    ),
    NamedMutant(
        "bookkeeper",
        "delete ignoring the version read (batch)",
        "deletion/adapters/ledgers/bookkeeper.py",
        "[(self._path(i), versions[i]) for i in ids]",
        "[(self._path(i), ANY_VERSION) for i in ids]",
        ("tests/integration/test_stores.py", "tests/integration/test_ledger_storage.py"),
    ),
    NamedMutant(
        "zookeeper",
        "delete ignoring the version read (one znode)",
        "deletion/adapters/stores/zookeeper.py",
        "self._client.delete(path, version=expected_version)",
        "self._client.delete(path)",
        ("tests/integration/test_stores.py", "tests/integration/test_ledger_storage.py"),
    ),
    NamedMutant(
        "zookeeper",
        "delete ignoring the version read (pipelined batch)",
        "deletion/adapters/stores/zookeeper.py",
        "self._client.delete_async(path, version)",
        "self._client.delete_async(path)",
        ("tests/integration/test_stores.py", "tests/integration/test_ledger_storage.py"),
    ),
    NamedMutant(
        "zookeeper",
        "delete ignoring the version read (multi request)",
        "deletion/adapters/stores/zookeeper_multi_delete.py",
        "transaction.delete(path, version)",
        "transaction.delete(path)",
        ("tests/integration/test_stores.py", "tests/integration/test_zookeeper_multi_delete.py"),
    ),
    NamedMutant(
        "zookeeper",
        "a version conflict in a batch reported as gone",
        "deletion/adapters/stores/zookeeper.py",
        "    if isinstance(error, BadVersionError):\n        return Deletion.CHANGED",
        "    if isinstance(error, BadVersionError):\n        return Deletion.GONE",
        ("tests/integration/test_stores.py", "tests/integration/test_zookeeper_multi_delete.py"),
    ),
    NamedMutant(
        "references",
        "a corrupt cursor value skipped",
        "deletion/domain/references.py",
        "    parse(cursor, node.data, path)\n",
        "    try:\n        parse(cursor, node.data, path)\n"
        "    except DecodeError:\n        return []\n",
        WALK,
    ),
    NamedMutant(
        "references",
        "the in-use reader ignoring cursor ledgers",
        "deletion/domain/references.py",
        '        found.extend(_cursor_references(store, f"{path}/{cursor_name}", cursor_name))\n',
        "        pass\n",
        WALK,
    ),
    NamedMutant(
        "pulsar_metadata",
        "the in-use reader ignoring schema ledgers",
        "deletion/adapters/pulsar_metadata.py",
        "schemas = schema_references(self._store, schema_path(topic)) or []",
        "schemas = []",
        WALK,
    ),
    NamedMutant(
        "decision",
        "a snapshot read before the due time trusted",
        "deletion/domain/decision.py",
        "    if snapshot.fetched_at < due:\n",
        "    if False:\n",
        ("tests/unit/test_decision.py",),
    ),
    NamedMutant(
        "decision",
        "a ledger above the largest referenced deleted without the age rule",
        "deletion/domain/decision.py",
        "    return Decision(Verdict.SAFE_TO_DELETE, why, needs_age=True, "
        "snapshot_at=snapshot.fetched_at)",
        "    return Decision(Verdict.SAFE_TO_DELETE, why)",
        ("tests/unit/test_decision.py",),
    ),
    NamedMutant(
        "deleter",
        "the age rule skipped (needs_age ignored)",
        "deletion/domain/deleter.py",
        "        if not ruling.needs_age:\n            return ruling\n",
        "        return ruling\n",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "ownership checked after age instead of before",
        "deletion/domain/deleter.py",
        OWNERSHIP_THEN_AGE,
        "        if record is not None and ruling.needs_age:\n"
        "            assert ruling.snapshot_at is not None\n"
        "            aged = decide_age(\n"
        "                info.ledger_id, record.ctime_ms, ruling.snapshot_at, self._margins\n"
        "            )\n"
        "            if aged.verdict is not Verdict.SAFE_TO_DELETE:\n                return aged\n"
        + OWNERSHIP_THEN_AGE,
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "the age taken now instead of when the snapshot was read",
        "deletion/domain/deleter.py",
        "decide_age(info.ledger_id, record.ctime_ms, ruling.snapshot_at, self._margins)",
        "decide_age(info.ledger_id, record.ctime_ms, self._clock(), self._margins)",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "the in-use look-up ignoring the due time (no fresh_after)",
        "deletion/domain/deleter.py",
        "self.in_use.lookup(topic, fresh_after)",
        "self.in_use.lookup(topic)",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "the cached in-use snapshot taken whatever the due time (no fresh_after)",
        "deletion/domain/deleter.py",
        "self.in_use.cached(topic, fresh_after)",
        "self.in_use.cached(topic)",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "an unchecked message decided on a cached snapshot",
        "deletion/domain/deleter.py",
        "fresh_after = due if info.check_ledger_still_in_use else self._clock()",
        "fresh_after = due",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "delete ignoring the version read (deleter)",
        "deletion/domain/deleter.py",
        "versions[info.ledger_id] = record.version",
        "versions[info.ledger_id] = -1",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "received",
        "the configured send delay no floor for the message's own",
        "consumers/received.py",
        "max(floor_delay_seconds, 0.0 if delay is None else delay / 1000.0)",
        "floor_delay_seconds if delay is None else delay / 1000.0",
        HANDLER,
    ),
    NamedMutant(
        "received",
        "the clock-skew allowance dropped",
        "consumers/received.py",
        " + delay_seconds + clock_skew_seconds)",
        " + delay_seconds)",
        HANDLER,
    ),
    NamedMutant(
        "admin",
        "a topic 404 read as no schema ledgers",
        "deletion/adapters/admin_api.py",
        "TopicLedgers(topic, False, self._schema_ledgers(topic), fetched_at)",
        "TopicLedgers(topic, False, frozenset(), fetched_at)",
        ("tests/integration/test_admin_api.py", "tests/integration/test_admin_api_transport.py"),
    ),
    NamedMutant(
        "admin",
        "proxy settings from the environment trusted (token rerouted)",
        "transport/admin_http.py",
        "            trust_env=False,",
        "            trust_env=True,",
        ("tests/integration/test_admin_api.py", "tests/integration/test_admin_api_transport.py"),
    ),
)


def _pytest(scratch: Path, tests: Sequence[str], env: Mapping[str, str]) -> int:
    argv = [sys.executable, "-m", "pytest", *PYTEST, *tests]
    return run_group(argv, scratch, env, scratch / "named.log", timeout=900)


def run_named(
    mutants: Sequence[NamedMutant], scratch: Path, zookeeper: str | None
) -> dict[str, str]:
    """name -> killed, survived, stale (the snippet is gone) or error (tests fail unmutated)."""
    # Bytecode is not cached: a mutant and its original can share a size and a second.
    env = {**test_environment(scratch, zookeeper), "PYTHONDONTWRITEBYTECODE": "1"}
    clean: dict[tuple[str, ...], int] = {}
    verdicts: dict[str, str] = {}
    for mutant in mutants:
        target = scratch / mutant.path
        original = target.read_text()
        if original.count(mutant.before) != 1:
            verdicts[mutant.name] = "stale"
            continue
        if mutant.tests not in clean:
            clean[mutant.tests] = _pytest(scratch, mutant.tests, env)
        if clean[mutant.tests] != 0:
            verdicts[mutant.name] = "error"
            continue
        target.write_text(original.replace(mutant.before, mutant.after))
        try:
            code = _pytest(scratch, mutant.tests, env)
        finally:
            target.write_text(original)
        verdicts[mutant.name] = "killed" if code == 1 else "survived" if code == 0 else "error"
    return verdicts
