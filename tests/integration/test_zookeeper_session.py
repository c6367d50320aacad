"""A real ZooKeeper session that expires under the deleter: the store sees a new connection,
and a batch whose session expired between its reads and its deletes deletes nothing; the next
batch, on the new session, reads afresh and deletes. The session is expired as ZooKeeper's own
tests do it: a second client takes over its id and password and closes it. What exists is read
raw with kazoo."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from kazoo.client import KazooClient

from core.clock import EpochSeconds
from core.retry import TransientRetry
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.decision import SafetyMargins, Verdict
from deletion.domain.deleter import Candidate, LedgerDeleter
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.outcome import Outcome, Result
from deletion.domain.ports import LedgerRecord
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend, zookeeper_backend
from harness.process import wait_until
from harness.zookeeper import ZooKeeperServer
from tests.reliability.oracle import GroundTruth, pending
from tests.reliability.raw_ledgers import ZooKeeperLedgers


def expire(store: ZooKeeperMetadataStore, hosts: str) -> None:
    """End the store's session from another client, as ZooKeeper's tests do."""
    session_id, password = store.client.client_id
    thief = KazooClient(hosts=hosts, client_id=(session_id, password), timeout=30)
    thief.start(timeout=30)
    thief.stop()
    thief.close()


@pytest.fixture
def backend(zookeeper: ZooKeeperServer, chroot: str) -> Iterator[Backend]:
    made = zookeeper_backend(zookeeper.hosts, chroot)
    yield made
    made.metadata.close()


def test_an_expired_session_is_a_new_connection(
    backend: Backend, zookeeper: ZooKeeperServer
) -> None:
    store = backend.metadata
    assert isinstance(store, ZooKeeperMetadataStore)
    before = store.session()
    assert before.connected
    expire(store, zookeeper.hosts)
    wait_until(
        lambda: store.session().connected and store.session().since > before.since,
        60, "the store connected again on a new session", poll=0.05,
    )  # fmt: skip
    assert store.get("/ledgers/LAYOUT") is not None  # and it works


class ExpiresAfterRead(BookKeeperLedgerStorage):
    """The session expires right after the batch's ledger reads, before its deletes."""

    def __init__(self, store: ZooKeeperMetadataStore, hosts: str) -> None:
        super().__init__(store)
        self._zk, self._hosts = store, hosts
        self.expired = 0

    def ledgers(self, ledger_ids: Sequence[int]) -> dict[int, LedgerRecord | None]:
        found = super().ledgers(ledger_ids)
        if not self.expired:
            before = self._zk.session()
            expire(self._zk, self._hosts)

            # Until connected again on a new session: the batch then meets a connection that
            # is up, but not the one it read on (while down, it is refused as down).
            def again() -> bool:
                now = self._zk.session()
                return now.connected and now != before

            wait_until(again, 60, "a new session after the expiry", poll=0.05)
            self.expired += 1
        return found


def test_a_session_that_expires_between_the_reads_and_the_deletes_deletes_nothing(
    backend: Backend, zookeeper: ZooKeeperServer, zk_client: KazooClient, namespace: NamespaceName
) -> None:
    store = backend.metadata
    assert isinstance(store, ZooKeeperMetadataStore)
    truth = GroundTruth(store, backend.factory)
    topic = TopicName(namespace, "orders")
    seeded = truth.seed(topic, ledgers=3)
    trimmed = seeded.ledgers[0]
    truth.release(topic, [trimmed])
    storage = ExpiresAfterRead(store, zookeeper.hosts)
    deleter = LedgerDeleter(
        InUseLedgersCache(MetadataInUseLedgers(store), ttl=600),
        storage,
        TransientRetry(attempts=3, sleep=lambda _: None),
        margins=SafetyMargins(send_delay=0, clock_skew=0, min_ledger_age=0),
        session=store.session,
    )
    candidate = Candidate(pending(topic, trimmed), namespace, EpochSeconds(0.0))

    (first,) = deleter.decide([candidate])
    assert storage.expired == 1
    assert not isinstance(first, Result) and first.verdict is Verdict.NOT_YET
    assert "connection broke during the batch" in first.reason
    raw = ZooKeeperLedgers(zk_client)
    assert trimmed in raw.alive()

    wait_until(lambda: store.session().connected, 60, "connected again", poll=0.05)
    (second,) = deleter.decide([candidate])
    assert isinstance(second, Result) and second.outcome is Outcome.DELETED, second
    assert trimmed not in raw.alive()
    assert set(truth.referenced()) <= raw.alive()
