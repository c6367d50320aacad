"""Cursor rotation through the real phase one, on a broker that stops answering (a pulsar-lite
of the test's own, stopped with SIGSTOP): of several cursors' rotations, the one whose
pending deletion is never acknowledged leaves its cursor's metadata alone (no compare-and-set),
and goes through once the broker answers again."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursor import CursorMetadata, DurableCursor, RotationOutcome
from harness.cursor_fixtures import CursorEnv
from harness.janitor import JanitorFactory
from harness.process import paused
from ledger_janitor.demo.embedded import EmbeddedBroker
from producers.phase_one import PhaseOne
from tests.integration.cursor.rotation_rig import referenced_ledger

WAIT = 3.0  # phase one's wait; the client's own send time-out is 60 s


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_rotation_whose_send_hangs_does_not_switch_its_cursor(
    cursor_env: CursorEnv, own_broker: EmbeddedBroker, tmp_path: Path
) -> None:
    factory = JanitorFactory(cursor_env.backend, own_broker.service_url, tmp_path)
    try:
        sidecar = factory.sidecar(**cursor_env.sidecar_settings(), operation_timeout_seconds=60)
        phase_one = PhaseOne(sidecar.pool, sidecar.registry, 1, timeout_seconds=WAIT)
        stores = cursor_env.stores(phase_one)
        cursors = {name: DurableCursor.open(cursor_env.topic, name, stores) for name in "abc"}
        for name in "ab":  # the broker answers: their old ledgers enqueued, then switched
            old = cursors[name].ledger_id
            assert cursors[name].rotate().outcome is RotationOutcome.SWITCHED
            assert referenced_ledger(cursor_env, name) == cursors[name].ledger_id != old
        hung = cursors["c"]
        old = hung.ledger_id
        store = cursor_env.backend.metadata
        path = CursorMetadata(store, cursor_env.topic, "c").path
        before = store.get(path)
        assert before is not None
        assert own_broker.process is not None
        with paused(own_broker.process):
            rotation = hung.rotate()
        assert rotation.outcome is RotationOutcome.NOT_ENQUEUED
        assert f"not acknowledged within {WAIT:g} s" in rotation.reason
        after = store.get(path)  # no compare-and-set: the same bytes at the same version
        assert after is not None and (after.data, after.stat.version) == (
            before.data,
            before.stat.version,
        )
        assert hung.ledger_id == old == referenced_ledger(cursor_env, "c")
        hung.persist()  # and it carries on in its old ledger
        # Continued, the broker answers: the rotation goes through.
        assert hung.rotate().outcome is RotationOutcome.SWITCHED
        assert referenced_ledger(cursor_env, "c") == hung.ledger_id != old
    finally:
        factory.close()
