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

KINDS = ("tests/unit/test_decision_kinds.py", "tests/integration/test_ledger_kinds.py")

NAMED: tuple[NamedMutant, ...] = (
    NamedMutant(
        "kinds",
        "a bucket snapshot deleted while its subscription may still read it",
        "deletion/domain/kinds.py",
        "    if through is None or through > end:\n",
        "    if True:\n",
        KINDS,
    ),
    NamedMutant(
        "kinds",
        "a compacted ledger deleted with no later compaction recorded above it",
        "deletion/domain/kinds.py",
        "    if named is None or named == ledger_id or mark <= ledger_id:\n",
        "    if named is None or named == ledger_id:\n",
        KINDS,
    ),
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
        "deleted = self._store.delete(self._path(ledger_id), expected_version)",
        "deleted = self._store.delete(self._path(ledger_id))",
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
        "Delete(paths[place], versions[place][1])",
        "Delete(paths[place], -1)",
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
        "    except DecodeError:\n        return None\n",
        WALK,
    ),
    NamedMutant(
        "references",
        "the in-use reader ignoring cursor ledgers",
        "deletion/domain/references.py",
        "        found.extend(references)\n",
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
        "a snapshot vouching for any id at or below the topic's newest (issue 24's hole)",
        "deletion/domain/decision.py",
        "    creator = _creator_may_record(info, record, snapshot)\n",
        "    creator = _creator_may_record(info, record, snapshot)\n"
        "    largest = snapshot.largest\n"
        "    if snapshot.exists and largest is not None and ledger_id <= largest:\n"
        "        return Decision(Verdict.SAFE_TO_DELETE, 'vouched for by the newest')\n",
        ("tests/unit/test_decision_creators.py",),
    ),
    NamedMutant(
        "decision",
        "the creators' rule dropped",
        "deletion/domain/decision.py",
        "    creator = _creator_may_record(info, record, snapshot)\n",
        "    creator = None\n",
        ("tests/unit/test_decision_creators.py",),
    ),
    NamedMutant(
        "decision",
        "a cursor ledger vouched for by the topic's newest data ledger",
        "deletion/domain/decision.py",
        "        current = creators.cursors.get(cursor)\n",
        "        current = creators.newest_data if cursor in creators.cursors else None\n",
        ("tests/unit/test_decision_creators.py",),
    ),
    NamedMutant(
        "decision",
        "the age rule dropped",
        "deletion/domain/decision.py",
        "    return decide_age(ledger_id, record.ctime_ms, snapshot.fetched_at, margins)\n",
        "    return Decision(Verdict.SAFE_TO_DELETE, 'no age rule')\n",
        ("tests/unit/test_decision_creators.py",),
    ),
    NamedMutant(
        "decision",
        "the age taken a day after the snapshot was read",
        "deletion/domain/decision.py",
        "decide_age(ledger_id, record.ctime_ms, snapshot.fetched_at, margins)",
        "decide_age(\n"
        "        ledger_id, record.ctime_ms, EpochSeconds(snapshot.fetched_at + 86400), margins\n"
        "    )",
        ("tests/unit/test_decision_creators.py",),
    ),
    NamedMutant(
        "deleter",
        "the record rules skipped (ownership only)",
        "deletion/domain/deleter.py",
        "        return decide_recordable(info, record, ruling.snapshot, self._margins)\n",
        "        return ruling\n",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "ownership checked after age instead of before",
        "deletion/domain/deleter.py",
        OWNERSHIP_THEN_AGE,
        "        assert ruling.snapshot is not None\n"
        "        aged = decide_recordable(info, record, ruling.snapshot, self._margins)\n"
        "        if aged.verdict is not Verdict.SAFE_TO_DELETE:\n            return aged\n"
        + OWNERSHIP_THEN_AGE,
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "the age taken now instead of when the snapshot was read",
        "deletion/domain/deleter.py",
        "decide_recordable(info, record, ruling.snapshot, self._margins)",
        "decide_recordable(\n"
        "            info, record,\n"
        "            __import__('dataclasses').replace(\n"
        "                ruling.snapshot, fetched_at=self._clock()\n"
        "            ),\n"
        "            self._margins,\n"
        "        )",
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
        "a batch's snapshot reused whatever the due time",
        "deletion/domain/deleter.py",
        "if snapshot is None or snapshot.fetched_at < fresh_after:",
        "if snapshot is None:",
        (*HANDLER, DELETER),
    ),
    NamedMutant(
        "deleter",
        "an unchecked message decided on a cached snapshot",
        "deletion/domain/deleter.py",
        "fresh_after = max(due if info.check_ledger_still_in_use else self._clock(), settled)",
        "fresh_after = max(due, settled)",
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
        "schemas = self._schema_ledgers(topic)",
        "schemas: frozenset[int] = frozenset()",
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
    NamedMutant(
        "archive",
        "the drain acks a requeued message before its phase-one re-send",
        "consumers/archive.py",
        "            if not dry_run:\n                assert archived.info is not None\n",
        "            if not dry_run:\n                consumer.acknowledge(archived.raw)\n"
        "                assert archived.info is not None\n",
        ("tests/unit/test_archive_drain_order.py",),
    ),
    NamedMutant(
        "archive",
        "the drain acks a re-archived message before the re-archive send",
        "consumers/archive.py",
        "            if not dry_run:\n                self._rearchive(archived, ruling.reason)\n",
        "            if not dry_run:\n                consumer.acknowledge(archived.raw)\n"
        "                self._rearchive(archived, ruling.reason)\n",
        ("tests/unit/test_archive_drain_order.py",),
    ),
    NamedMutant(
        "pulsar_metadata",
        "the in-use snapshot's time taken after its reads",
        "deletion/adapters/pulsar_metadata.py",
        "        fetched_at = self._clock()\n"
        "        walk = walk_managed_ledger(self._store, managed_ledger_path(topic))\n"
        "        schemas = schema_references(self._store, schema_path(topic)) or []\n",
        "        walk = walk_managed_ledger(self._store, managed_ledger_path(topic))\n"
        "        schemas = schema_references(self._store, schema_path(topic)) or []\n"
        "        fetched_at = self._clock()\n",
        WALK,
    ),
    NamedMutant(
        "admin",
        "the in-use snapshot's time taken after the broker answered",
        "deletion/adapters/admin_api.py",
        "        fetched_at = self._clock()\n"
        '        payload = self._payload(self._get(rest_path(topic, "internalStats")))\n',
        '        payload = self._payload(self._get(rest_path(topic, "internalStats")))\n'
        "        fetched_at = self._clock()\n",
        ("tests/integration/test_admin_api.py",),
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
