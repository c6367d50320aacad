"""Opening ZooKeeper from a URL: no opening makes a chroot, and each checks the layout."""

from __future__ import annotations

import pytest

from config import parse_store_url
from core.errors import LayoutError
from deletion.adapters.ledgers.bookie_http import BookieHttpLedgerStorage
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.opening import (
    StoreSpec,
    open_ledger_storage,
    open_metadata_store,
    open_store,
)
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from harness.janitor import make_chroot
from harness.zookeeper import ZooKeeperServer


def test_no_opening_makes_the_chroot_and_each_names_what_is_missing(
    zookeeper: ZooKeeperServer, chroot: str
) -> None:
    spec = StoreSpec(parse_store_url(f"zk:{zookeeper.hosts}{chroot}"), timeout=10)
    root = ZooKeeperMetadataStore.connect(parse_store_url(f"zk:{zookeeper.hosts}"))
    where = f"ZooKeeper at {zookeeper.hosts}{chroot}"
    try:
        with pytest.raises(LayoutError, match=f"no /ledgers/LAYOUT in {where}: wrong store"):
            open_ledger_storage(spec)
        with pytest.raises(LayoutError, match=f"no /admin in {where}: wrong store or chroot"):
            open_metadata_store(spec)
        open_store(spec).close()  # the store alone: connected, nothing checked, nothing made
        assert root.get(chroot) is None
        make_chroot(zookeeper.hosts, chroot)
        store = open_metadata_store(spec)
        try:
            assert isinstance(store, ZooKeeperMetadataStore)
            store.create("/x", b"1")
            node = root.get(f"{chroot}/x")
            assert node is not None and node.data == b"1"
        finally:
            store.close()
        ledgers = open_ledger_storage(spec)
        assert type(ledgers) is BookKeeperLedgerStorage
        ledgers.close()
        deleting = open_ledger_storage(spec, bookie_http="http://127.0.0.1:1")
        assert isinstance(deleting, BookieHttpLedgerStorage)
        deleting.close()
    finally:
        root.close()
