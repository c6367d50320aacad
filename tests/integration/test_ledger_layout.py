"""BookKeeper's ledger store says "gone" only while its LAYOUT is there: on the real
ZooKeeper and etcd, every read that finds a ledger missing reads LAYOUT in the same batch,
every delete that finds one gone reads it next; without it the answer is an error (unknown),
for the whole batch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.errors import LayoutError
from deletion.adapters.layout import BOOKKEEPER_LAYOUT
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.domain.ports import ANY_VERSION, Deletion
from harness.janitor import Backend, zookeeper_backend
from harness.zookeeper import ZooKeeperServer
from tests.integration.stores_rig import CUSTOM

LAYOUT = "/ledgers/LAYOUT"


@pytest.fixture(params=["zookeeper", "etcd"])
def bookkeeper(request: pytest.FixtureRequest, chroot: str) -> Iterator[Backend]:
    if request.param == "etcd":
        from harness.etcd import etcd_backend

        chosen = etcd_backend(request.getfixturevalue("etcd"))
    else:
        zookeeper: ZooKeeperServer = request.getfixturevalue("zookeeper")
        chosen = zookeeper_backend(zookeeper.hosts, chroot)
    yield chosen
    chosen.ledgers.close()


def test_a_missing_ledger_is_gone_only_while_the_layout_is_there(bookkeeper: Backend) -> None:
    storage, store = bookkeeper.ledgers, bookkeeper.metadata
    assert isinstance(storage, BookKeeperLedgerStorage)
    present, absent = (bookkeeper.factory.create_ledger(CUSTOM) for _ in range(2))
    assert storage.delete_ledgers({absent: ANY_VERSION}) == {absent: Deletion.DELETED}
    found = storage.ledgers([present, absent])
    assert found[present] is not None and found[absent] is None
    assert storage.delete_ledgers({absent: ANY_VERSION}) == {absent: Deletion.GONE}

    assert store.delete(LAYOUT)  # a wiped or swapped store: nothing in it is "gone"
    where = f"no {LAYOUT} in the ledger store: wrong store or chroot"
    for read in (
        lambda: storage.ledger(absent),
        lambda: storage.ledgers([present, absent]),  # the whole batch: unknown
        lambda: storage.ledger(present),
        lambda: storage.delete_ledger(absent),
        lambda: storage.delete_ledgers({absent: ANY_VERSION}),
        lambda: storage.delete_ledgers({absent: ANY_VERSION, present: ANY_VERSION}),
    ):
        with pytest.raises(LayoutError, match=where):
            read()

    store.create(LAYOUT, BOOKKEEPER_LAYOUT)
    assert storage.ledger(absent) is None
    assert storage.delete_ledger(absent) is False
