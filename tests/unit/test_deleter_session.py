"""The deleter acts only on what it read during one unbroken connection to its stores: a
snapshot read before the connection's start is read again; with the age rule on, nothing is
decided until the connection is `settle` seconds old (brokers' writes held up by a ZooKeeper
outage land right after it); a connection that breaks between the reads and the deletes
deletes nothing. The connection is a fake here (`Session`); tests/integration/
test_zookeeper_session.py breaks a real one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from core.clock import EpochSeconds
from core.errors import TransientMetadataError
from deletion.domain.decision import SafetyMargins
from deletion.domain.outcome import Outcome
from deletion.domain.ports import Deletion, LedgerRecord, Session
from tests.unit.handler_rig import NOW, TOPIC, FlakyStorage, Rig, _info, _outcomes, rig

__all__ = ["rig"]  # the fixture

SETTLE = 30.0
DUE = NOW - 30  # published at NOW - 100, the 60 s send delay, the 10 s skew allowance


@dataclass
class Connection:
    """A store's connection that the test breaks and makes again."""

    current: Session

    def __call__(self) -> Session:
        return self.current


class BreaksOnRead(FlakyStorage):
    """The connection breaks and is made again right after the batch's ledger reads."""

    connection: Connection | None = None

    def ledgers(self, ledger_ids: list[int]) -> dict[int, LedgerRecord | None]:  # type: ignore[override]
        found = super().ledgers(ledger_ids)
        assert self.connection is not None
        self.connection.current = Session(True, EpochSeconds(NOW - SETTLE - 1))
        return found


@pytest.fixture
def margins(rig: Rig) -> SafetyMargins:
    rig.margins = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=3600, settle=SETTLE)
    return rig.margins


def test_nothing_is_decided_until_the_connection_has_settled(
    rig: Rig, margins: SafetyMargins
) -> None:
    connected_at = NOW - 5
    rig.session = Connection(Session(True, EpochSeconds(connected_at)))
    (result,) = rig.handle_batch(_info(3))
    assert result.outcome is Outcome.RECONSUMED
    assert "(re)connected 5s ago" in result.reason
    assert rig.storage.deleted == [] and rig.source.calls == 0
    # Reconsumed for exactly as long as the connection still needs.
    assert rig.pool.sent[0][2]["DELAY_TIME"] == str(int((connected_at + SETTLE - NOW) * 1000))


def test_a_settled_connection_lets_a_fresh_snapshot_decide(
    rig: Rig, margins: SafetyMargins
) -> None:
    rig.session = Connection(Session(True, EpochSeconds(NOW - SETTLE)))
    assert _outcomes(rig.handle_batch(_info(3))) == ["deleted"]


def test_a_snapshot_read_before_the_connection_settled_is_read_again(
    rig: Rig, margins: SafetyMargins
) -> None:
    """Read after the message was due, but on a connection made since (or too young then): a
    cached snapshot from before an outage, or from before this process was paused past its
    session, is not acted on."""
    rig.cache = rig.new_cache()
    rig.source.fetched_at = DUE + 10
    rig.cache.lookup(TOPIC)  # read on the old connection
    rig.session = Connection(Session(True, EpochSeconds(DUE + 20 - SETTLE)))
    rig.source.ledgers, rig.source.fetched_at = frozenset({3, 5, 9}), NOW
    (result,) = rig.handle_batch(_info(3))
    assert result.outcome is Outcome.RECONSUMED and "still referenced" in result.reason
    assert rig.source.calls == 2 and rig.storage.deleted == []


def test_with_the_age_rule_off_a_new_connection_still_needs_a_snapshot_of_its_own(
    rig: Rig,
) -> None:
    rig.margins = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=0, settle=SETTLE)
    rig.cache = rig.new_cache()
    rig.source.fetched_at = DUE + 10
    rig.cache.lookup(TOPIC)
    rig.session = Connection(Session(True, EpochSeconds(DUE + 20)))  # no settling without age
    rig.source.ledgers, rig.source.fetched_at = frozenset({3, 5, 9}), NOW
    (result,) = rig.handle_batch(_info(3))
    assert result.outcome is Outcome.RECONSUMED and rig.source.calls == 2


def test_a_disconnected_store_decides_nothing(rig: Rig, margins: SafetyMargins) -> None:
    rig.session = Connection(Session(False, EpochSeconds(NOW - 3600)))
    (result,) = rig.handle_batch(_info(3))
    assert result.outcome is Outcome.RECONSUMED and "connection is broken" in result.reason
    assert rig.storage.deleted == []


def test_a_connection_broken_between_the_reads_and_the_deletes_deletes_nothing(
    rig: Rig, margins: SafetyMargins
) -> None:
    connection = Connection(Session(True, EpochSeconds(NOW - 3600)))
    storage = BreaksOnRead(dict(rig.storage.records))
    storage.connection = connection
    rig.storage, rig.session = storage, connection
    results = rig.handle_batch(_info(3), _info(4))
    assert _outcomes(results) == ["reconsumed", "reconsumed"]
    assert all("connection broke during the batch" in r.reason for r in results)
    assert storage.deleted == []
    # The next batch, on the new (settled) connection, reads afresh and deletes.
    assert _outcomes(rig.handle_batch(_info(3))) == ["deleted"]


class LosesTheFirstDelete(FlakyStorage):
    """The first delete is lost with the connection (a ConnectionLoss); the store connects
    again at once."""

    connection: Connection | None = None

    def delete_ledgers(self, versions: Mapping[int, int]) -> dict[int, Deletion]:
        assert self.connection is not None
        if self.connection.current.since < NOW - 10:
            self.connection.current = Session(True, EpochSeconds(NOW - 10))
            raise TransientMetadataError("ZooKeeper unavailable: ConnectionLoss")
        return super().delete_ledgers(versions)


def test_a_delete_lost_with_the_connection_is_not_retried_on_the_next(
    rig: Rig, margins: SafetyMargins
) -> None:
    """The retry of a transient failure would act on the broken connection's reads."""
    rig.margins = SafetyMargins(send_delay=60, clock_skew=10, min_ledger_age=0, settle=SETTLE)
    connection = Connection(Session(True, EpochSeconds(NOW - 3600)))
    storage = LosesTheFirstDelete(dict(rig.storage.records))
    storage.connection = connection
    rig.storage, rig.session = storage, connection
    (result,) = rig.handle_batch(_info(3))
    assert result.outcome is Outcome.RECONSUMED and "connection broke" in result.reason
    assert storage.deleted == []
