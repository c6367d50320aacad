"""Opening ZooKeeper from a URL: only the sidecar's opening creates the chroot."""

from __future__ import annotations

import pytest

from config import parse_store_url
from deletion.adapters.ledgers.bookie_http import BookieHttpLedgerStorage
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.opening import StoreSpec, open_ledger_storage, open_metadata_store
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from harness.zookeeper import ZooKeeperServer


@pytest.mark.filterwarnings("ignore:No chroot path exists")
def test_only_the_creating_opening_makes_the_chroot(
    zookeeper: ZooKeeperServer, chroot: str
) -> None:
    spec = StoreSpec(parse_store_url(f"zk:{zookeeper.hosts}{chroot}"), timeout=10)
    root = ZooKeeperMetadataStore.connect(parse_store_url(f"zk:{zookeeper.hosts}"))
    try:
        reader = open_metadata_store(spec, create=False)
        reader.close()
        ledgers = open_ledger_storage(spec, create=False)
        assert type(ledgers) is BookKeeperLedgerStorage
        ledgers.close()
        assert root.get(chroot) is None
        store = open_metadata_store(spec)
        try:
            assert isinstance(store, ZooKeeperMetadataStore)
            assert root.get(chroot) is not None
            store.create("/x", b"1")
            node = root.get(f"{chroot}/x")
            assert node is not None and node.data == b"1"
        finally:
            store.close()
        deleting = open_ledger_storage(spec, bookie_http="http://127.0.0.1:1")
        assert isinstance(deleting, BookieHttpLedgerStorage)
        deleting.close()
    finally:
        root.close()
