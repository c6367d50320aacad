"""DeletionHandler with a batch of messages: one read and one delete for all of them, and
no message's trouble held against another."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from core.errors import TransientBrokerError, TransientLedgerStorageError
from deletion.domain.topics import NamespaceName, TopicName
from tests.unit.handler_rig import NS, Rig, _info, _outcomes, _record, rig

__all__ = ["rig"]  # the fixture


def test_a_batch_reads_once_and_deletes_once(rig: Rig) -> None:
    rig.storage.records.update({6: _record(6), 7: _record(7)})
    results = rig.handle_batch(_info(3), _info(4), _info(5), _info(6), _info(7))
    assert _outcomes(results) == ["deleted", "deleted", "reconsumed", "deleted", "deleted"]
    assert rig.storage.batches == ["read 4", "delete 4"]
    assert sorted(rig.storage.deleted) == [3, 4, 6, 7]
    assert len(rig.consumer.acked) == 5  # the reconsumed one once its retry was sent


def test_the_same_ledger_twice_in_a_batch_is_deleted_once(rig: Rig) -> None:
    results = rig.handle_batch(_info(3), _info(3), _info(3))
    assert _outcomes(results) == ["deleted", "already_gone", "already_gone"]
    assert rig.storage.deleted == [3]
    assert rig.storage.batches == ["read 1", "delete 1"]


def test_a_corrupt_ledger_holds_back_no_other_in_its_batch(rig: Rig) -> None:
    rig.storage.records[6] = _record(6)
    rig.storage.corrupt.add(4)
    results = rig.handle_batch(_info(3), _info(4), _info(6))
    assert _outcomes(results) == ["deleted", "reconsumed", "deleted"]
    assert "cannot tell whether it is in use: corrupt metadata of ledger 4" in results[1].reason
    assert sorted(rig.storage.deleted) == [3, 6]
    # The batch read failed at once (a decode error is not transient); then one at a time.
    assert rig.storage.batches == ["read 3", "read 1", "read 1", "read 1", "delete 2"]


def test_a_transient_failure_in_a_batch_is_retried_not_reported(rig: Rig) -> None:
    rig.storage.records[6] = _record(6)
    rig.storage.failures = [TransientLedgerStorageError("blip")] * 2
    results = rig.handle_batch(_info(3), _info(4), _info(6))
    assert _outcomes(results) == ["deleted", "deleted", "deleted"]
    assert len(rig.sleeps) == 2


def test_hostile_and_undecodable_messages_do_not_spoil_their_batch(rig: Rig) -> None:
    elsewhere = TopicName(NamespaceName("other-tenant", "ns"), "orders")
    results = rig.handle_batch(_info(3), b"\x00garbage", _info(4, topic=elsewhere), _info(4))
    assert _outcomes(results) == ["deleted", "archived", "archived", "deleted"]
    assert "undecodable" in results[1].reason
    assert "outside namespace" in results[2].reason
    assert sorted(rig.storage.deleted) == [3, 4]


def test_a_failed_send_hands_back_only_its_own_message(rig: Rig) -> None:
    sent = rig.pool.send

    def refuse_retries(topic: str, *args: Any, **kwargs: Any) -> Future[Any]:
        if topic == NS.retry_topic:
            failed: Future[Any] = Future()
            failed.set_exception(TransientBrokerError("down"))
            return failed
        return sent(topic, *args, **kwargs)

    rig.pool.send = refuse_retries  # type: ignore[method-assign]
    results = rig.handle_batch(_info(3), _info(5), _info(4))
    assert isinstance(results[1], TransientBrokerError)
    assert _outcomes([results[0], results[2]]) == ["deleted", "deleted"]
    assert len(rig.consumer.acked) == 2  # not the one handed back
