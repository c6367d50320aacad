"""The etcd MetadataStore against a real etcd, in what is etcd's own: Pulsar's key layout,
paging, batches past one transaction, outages. The store contract (test_stores.py) runs on
etcd through the `backend` fixture, as every other test on a backend does."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from config import parse_store_url
from core.clock import EpochSeconds
from core.errors import MetadataError, TransientMetadataError, VersionConflictError
from deletion.adapters.stores import etcd as etcd_module
from deletion.adapters.stores.etcd import EtcdMetadataStore
from deletion.domain.ports import ANY_VERSION, Deletion
from harness.etcd import EtcdServer, etcd_backend
from harness.janitor import Backend
from ledger_janitor.demo.embedded import free_port


@pytest.fixture
def backend(etcd: EtcdServer) -> Iterator[Backend]:
    chosen = etcd_backend(etcd)
    yield chosen
    chosen.ledgers.close()  # closes the shared store too


@pytest.fixture
def store(backend: Backend) -> EtcdMetadataStore:
    assert isinstance(backend.metadata, EtcdMetadataStore)
    return backend.metadata


def _raw(server: EtcdServer, api: str, **payload: object) -> dict[str, object]:
    """etcd spoken to directly, as Pulsar's broker would write to it."""
    reply = httpx.post(f"{server.endpoint}/v3/{api}", json=payload, timeout=10)
    reply.raise_for_status()
    result: dict[str, object] = reply.json()
    return result


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _raw_kv(server: EtcdServer, key: str) -> dict[str, str] | None:
    kvs = _raw(server, "kv/range", key=_b64(key)).get("kvs")
    assert kvs is None or isinstance(kvs, list)
    return kvs[0] if kvs else None


def test_the_parsed_url_is_pulsars_form(etcd: EtcdServer) -> None:
    assert parse_store_url(etcd.url).endpoints == (etcd.endpoint,)


def test_keys_are_the_paths_and_versions_are_etcds_minus_one(
    store: EtcdMetadataStore, etcd: EtcdServer
) -> None:
    path = "/managed-ledgers/t/ns/persistent/a%20b"
    store.create(path, b"v0")
    kv = _raw_kv(etcd, path)
    assert kv is not None
    assert (base64.b64decode(kv["value"]), kv["version"]) == (b"v0", "1")
    assert store.set(path, b"v1", 0).version == 1
    kv = _raw_kv(etcd, path)
    assert kv is not None and kv["version"] == "2"
    node = store.get(path)
    assert node is not None and node.stat.version == 1
    assert _raw_kv(etcd, "/managed-ledgers/t/ns/persistent") is not None  # a parent we made


def test_a_tree_pulsar_wrote_without_parents(store: EtcdMetadataStore, etcd: EtcdServer) -> None:
    """Pulsar's etcd store puts only the keys it is given; the parents are implicit."""
    for key in ("/admin/policies/t/ns", "/admin/policies/t/ns2", "/admin/clusters/c1"):
        _raw(etcd, "kv/put", key=_b64(key), value=_b64("{}"))
    # beside the cluster's roots the backend laid out (harness.janitor.lay_out_cluster)
    assert store.children("/") == ["admin", "ledgers", "managed-ledgers"]
    assert store.children("/admin") == ["clusters", "policies"]
    assert store.children("/admin/policies/t") == ["ns", "ns2"]
    assert store.get("/admin/policies") is None
    assert store.delete("/admin/policies") is False  # no such key: nothing below is touched
    assert store.children("/admin/policies") == ["t"]
    store.create("/admin/policies/t/ns3", b"")  # its parents appear; the siblings stay
    assert store.children("/admin/policies/t") == ["ns", "ns2", "ns3"]


def test_children_pages_skip_whole_subtrees(
    store: EtcdMetadataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "s-x" sorts between "s" and "s/...", "s0" right after every "s/..." key.
    for path in ["/d/s", "/d/s-x", "/d/s0", "/d/t", "/d/u/v", "/d/é"]:
        store.create(path, b"")
    for i in range(7):
        store.create(f"/d/s/{i}/deeper", b"")
    reads: list[int] = []
    real = store._request

    def counted(path: str, api: str, payload: object) -> dict[str, object]:
        reads.append(1)
        return real(path, api, payload)  # type: ignore[arg-type]

    monkeypatch.setattr(etcd_module, "CHILDREN_PAGE", 2)
    monkeypatch.setattr(store, "_request", counted)
    assert store.children("/d") == ["s", "s-x", "s0", "t", "u", "é"]
    assert len(reads) < 8  # the 14 keys below /d/s are skipped, not read two by two
    assert store.children("/d/s") == [str(i) for i in range(7)]


def test_invalid_paths_are_refused_before_any_request(
    store: EtcdMetadataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("an invalid path reached etcd")

    monkeypatch.setattr(store, "_request", refuse)
    for path in ["", "a", "/a/", "/a//b"]:
        for operation in (store.children, store.get, lambda p: store.create(p, b"")):
            with pytest.raises(MetadataError, match="invalid metadata path"):
                operation(path)


def test_batches_larger_than_one_transaction(store: EtcdMetadataStore) -> None:
    paths = [f"/many/{i:04d}" for i in range(300)]
    for path in paths:
        store.create(path, path.encode())
    store.set(paths[200], b"moved")
    nodes = store.get_many([*paths, "/many/missing"])
    assert [node.data if node else None for node in nodes[:-1]] == [
        b"moved" if p == paths[200] else p.encode() for p in paths
    ]
    assert nodes[-1] is None
    doomed = [(p, 0) for p in paths[:250]] + [(paths[0], ANY_VERSION), ("/many/missing", 0)]
    outcomes = store.delete_many(doomed)
    expected = [Deletion.DELETED] * 250 + [Deletion.GONE, Deletion.GONE]
    expected[200] = Deletion.CHANGED
    assert outcomes == expected
    assert store.children("/many") == [p.rsplit("/", 1)[1] for p in [paths[200], *paths[250:]]]


def test_compare_and_set_admits_one_writer(etcd: EtcdServer, store: EtcdMetadataStore) -> None:
    """Versioned writes are etcd transactions: of writers holding one version, one wins."""
    store.create("/race", b"0")
    stores = [EtcdMetadataStore.connect(parse_store_url(etcd.url)) for _ in range(6)]
    won: list[int] = []
    start = threading.Barrier(len(stores))

    def write(n: int) -> None:
        start.wait()
        try:
            stores[n].set("/race", str(n).encode(), 0)
            won.append(n)
        except VersionConflictError:
            pass

    threads = [threading.Thread(target=write, args=(n,)) for n in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for other in stores:
        other.close()
    assert len(won) == 1
    node = store.get("/race")
    assert node is not None
    assert (node.data, node.stat.version) == (str(won[0]).encode(), 1)


def test_a_key_written_before_we_looked_is_no_older_than_our_first_look(
    etcd: EtcdServer, store: EtcdMetadataStore
) -> None:
    """etcd keeps no times: a key's age is at most how long this store has watched."""
    _raw(etcd, "kv/put", key=_b64("/old"), value=_b64("x"))
    now = [EpochSeconds(1_000_000.0)]
    late = EtcdMetadataStore([etcd.endpoint], timeout=5, clock=lambda: now[0])
    try:
        first = late.get("/old")
        now[0] = EpochSeconds(now[0] + 60)
        again = late.get("/old")
        created = late.create("/new", b"")
        assert first is not None and again is not None
        assert first.stat.ctime_ms == again.stat.ctime_ms == 1_000_000_000
        assert created.ctime_ms == 1_000_060_000
    finally:
        late.close()


def test_a_dead_port_is_transient() -> None:
    url = parse_store_url(f"etcd:http://127.0.0.1:{free_port()}")
    with pytest.raises(TransientMetadataError, match="no etcd endpoint answers"):
        EtcdMetadataStore.connect(url, timeout=1.0)


def test_a_dead_endpoint_is_passed_over(etcd: EtcdServer) -> None:
    url = parse_store_url(f"etcd:http://127.0.0.1:{free_port()},{etcd.endpoint}")
    store = EtcdMetadataStore.connect(url, timeout=2.0)
    try:
        assert store.get("/nothing") is None
    finally:
        store.close()


def test_an_outage_fails_every_operation_transiently_naming_the_path(tmp_path: Path) -> None:
    server = EtcdServer(tmp_path).start()
    store = EtcdMetadataStore.connect(parse_store_url(server.url), timeout=1.0)
    try:
        store.create("/x/one", b"")
        server.stop()
        started = time.monotonic()
        with pytest.raises(TransientMetadataError, match="/x/one"):
            store.get("/x/one")
        with pytest.raises(TransientMetadataError, match="/x/one"):
            store.delete("/x/one", 0)
        with pytest.raises(TransientMetadataError, match="/x/one"):
            store.get_many(["/x/one", "/x/two"])
        with pytest.raises(TransientMetadataError, match="/x/one"):
            store.delete_many([("/x/one", 0), ("/x/two", 4)])
        with pytest.raises(TransientMetadataError, match="/x"):
            store.children("/x")
        assert time.monotonic() - started < 20
    finally:
        server.stop()
        store.close()
