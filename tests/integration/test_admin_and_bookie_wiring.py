"""The admin-REST in-use source and bookie-HTTP deletion, wired into a real worker."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from config import ServiceConfiguration
from core.clock import EpochSeconds
from core.errors import ConfigurationError, TransientLedgerStorageError
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.ledgers.bookie_http import BookieHttpLedgerStorage
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.opening import open_in_use_source
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName, java_url_encode
from deletion.wire.bookkeeper_metadata import ledger_path
from harness.http import serving
from harness.janitor import Backend, JanitorFactory, Recorder
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.demo.seeding import TopicSeeder, pending
from transport.auth import token_from

PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


def test_token_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("from-file\n")
    monkeypatch.setenv("JANITOR_TOKEN", "from-env")
    assert token_from(PLUGIN, "token:abc") == "abc"
    assert token_from(PLUGIN, f"file:{tmp_path / 'token'}") == "from-file"
    assert token_from(PLUGIN, f"file://{tmp_path / 'token'}") == "from-file"
    assert token_from(PLUGIN, "env:JANITOR_TOKEN") == "from-env"
    data = base64.b64encode(b"from-data").decode()
    assert token_from(PLUGIN, f"data:;base64,{data}") == "from-data"
    assert token_from(PLUGIN, "raw.jwt.value") == "raw.jwt.value"
    assert token_from("", "token:abc") is None
    with pytest.raises(ConfigurationError, match="token file"):
        token_from(PLUGIN, f"file:{tmp_path / 'missing'}")
    with pytest.raises(ConfigurationError, match="NOT_SET"):
        token_from(PLUGIN, "env:NOT_SET")


def test_admin_source_needs_a_web_service_url(backend: Backend) -> None:
    config = ServiceConfiguration().with_overrides(in_use_ledgers_source="admin")
    with pytest.raises(ConfigurationError, match="webServiceUrl"):
        open_in_use_source(config, backend.metadata, lambda: EpochSeconds(0.0))


def _internal_stats(ledgers: list[int], cursor: int) -> dict[str, Any]:
    return {
        "entriesAddedCounter": 10,
        "lastConfirmedEntry": f"{ledgers[-1]}:4",
        "ledgers": [
            {"ledgerId": i, "entries": 5, "size": 100, "offloaded": False} for i in ledgers
        ],
        "cursors": {"sub": {"cursorLedger": cursor, "markDeletePosition": f"{ledgers[-1]}:1"}},
        "schemaLedgers": [],
        "compactedLedger": {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False},
    }


def test_worker_reads_in_use_ledgers_from_internal_stats(
    janitor: JanitorFactory, namespace: NamespaceName
) -> None:
    seeder = TopicSeeder(janitor.backend.metadata, janitor.backend.factory)
    seeded = seeder.seed(TopicName(namespace, "stats topic"), ledgers=4)
    released, kept_by_broker = seeded.ledgers[0], seeded.ledgers[1]
    seeder.release(seeded, [released, kept_by_broker])  # gone from the store's metadata...
    served = _internal_stats([kept_by_broker, *seeded.ledgers], seeded.cursor_ledger)
    expected_path = (
        f"/admin/v2/persistent/{namespace}/{java_url_encode('stats topic')}/internalStats"
    )
    requests: list[str] = []

    def respond(method: str, path: str) -> tuple[int, Any]:
        if method in ("PUT", "POST"):
            return 204, None  # the retry topic's setup (and its schema) before the first retry
        requests.append(path)
        return (200, served) if path == expected_path else (404, {"reason": "Topic not found"})

    with serving(respond) as url:
        janitor.sidecar().phase_one.enqueue(
            [pending(seeded.topic, released), pending(seeded.topic, kept_by_broker)]
        )
        recorder = Recorder()
        janitor.worker(recorder, in_use_ledgers_source="ADMIN", web_service_url=url)
        recorder.wait_for(lambda rs: len(rs) >= 2)
    assert recorder.of(released) == [Outcome.DELETED]
    assert recorder.of(kept_by_broker)[0] is Outcome.RECONSUMED  # ...but the broker has it
    assert janitor.backend.exists(kept_by_broker)
    assert set(requests) == {expected_path}


def test_bookie_http_deletion(zookeeper: ZooKeeperServer, chroot: str) -> None:
    from harness.janitor import zookeeper_backend

    backend = zookeeper_backend(zookeeper.hosts, chroot)
    ledger_id = backend.factory.create_ledger({"application": b"pulsar"})
    failing = {"on": False}

    def bookie(method: str, path: str) -> tuple[int, Any]:
        url = urlparse(path)
        if method != "DELETE" or url.path != "/api/v1/ledger/delete":
            return 404, {}
        if failing["on"]:
            return 500, {"error": "bookie busy"}
        backend.metadata.delete(ledger_path(int(parse_qs(url.query)["ledger_id"][0])))
        return 200, "Deleted ledger"

    try:
        with serving(bookie) as url:
            assert isinstance(backend.ledgers, BookKeeperLedgerStorage)
            storage = BookieHttpLedgerStorage(backend.ledgers, url, timeout_seconds=5)
            failing["on"] = True
            with pytest.raises(TransientLedgerStorageError, match="HTTP 500"):
                storage.delete_ledger(ledger_id)
            failing["on"] = False
            assert storage.delete_ledger(ledger_id) is True
            assert storage.ledger(ledger_id) is None
            assert storage.delete_ledger(ledger_id) is False
    finally:
        backend.ledgers.close()


def test_a_sidecar_talks_to_the_brokers_admin_api_through_one_client(
    janitor: JanitorFactory,
) -> None:
    """Phase one's topic set-up and phase two's in-use source share the sidecar's client."""
    with serving(lambda method, path: (404, {"reason": "Topic not found"})) as url:
        sidecar = janitor.sidecar(in_use_ledgers_source="ADMIN", web_service_url=url)
        assert sidecar.admin is not None
        source = sidecar.handler().in_use.source
        assert isinstance(source, AdminApiInUseLedgers)
        assert source.http is sidecar.admin.http
