"""A bookie: `bin/pulsar bookie` with `PULSAR_BOOKKEEPER_CONF`, its journal and ledger
directories under its own root, its HTTP API on (BookKeeper 4.17's `HttpRouter`:
`/heartbeat`, `/api/v1/ledger/list`, `/api/v1/ledger/metadata`, `PUT /api/v1/bookie/gc`).

`/api/v1/ledger/list` is NOT what this bookie holds: `ListLedgerService` iterates the ledger
manager, i.e. the cluster's ledger metadata in ZooKeeper, the same on every bookie. Which
bookies hold a ledger is its metadata's ensembles (`ensemble_of`).

What it keeps of entries on disk are its entry logs, `<ledgers>/current/<hex>.log` (not the
journal, nor the RocksDB index's own files under `current/ledgers` and `current/locations`):
`entry_log_bytes` is what its garbage collection frees.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

import httpx

from harness.pulsar_cluster.node import JvmNode
from harness.pulsar_dist import Distribution
from harness.pulsar_standalone import read_settings
from ledger_janitor.demo.embedded import free_port

OVERRIDES = Path(__file__).parents[1] / "pulsar" / "cluster" / "bookkeeper.conf"


class Bookie(JvmNode):
    command = "bookie"
    conf_variable = "PULSAR_BOOKKEEPER_CONF"
    conf_name = "bookkeeper.conf"

    def __init__(
        self,
        index: int,
        zookeeper_hosts: str,
        root: Path,
        dist: Distribution,
        memory: Mapping[str, str],
        extra: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(f"bookie-{index}", root, dist, memory)
        self.zookeeper_hosts = zookeeper_hosts  # host:port,host:port,...
        self.port, self.http_port, self.metrics_port = free_port(), free_port(), free_port()
        self.extra = dict(extra or {})

    @property
    def bookie_id(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def ledger_dir(self) -> Path:
        return self.data_dir / "ledgers"

    def settings(self) -> dict[str, object]:
        hosts = self.zookeeper_hosts.replace(",", ";")
        return {
            **read_settings(OVERRIDES),
            "bookiePort": self.port,
            "httpServerPort": self.http_port,
            "prometheusStatsHttpPort": self.metrics_port,
            "journalDirectory": self.data_dir / "journal",
            "ledgerDirectories": self.ledger_dir,
            "metadataServiceUri": f"zk+hierarchical://{hosts}/ledgers",
            "zkServers": self.zookeeper_hosts,
            **self.extra,
        }

    def _http(self, method: str, path: str, timeout: float = 30.0) -> httpx.Response:
        with httpx.Client(base_url=self.http_url, timeout=timeout, trust_env=False) as http:
            return http.request(method, path)

    def ready(self) -> bool:
        try:
            return self.running and self._http("GET", "/heartbeat", 5).status_code == 200
        except httpx.HTTPError:
            return False

    def listed_ledgers(self) -> set[int]:
        """Every ledger whose metadata exists, as this bookie's ledger manager lists them."""
        response = self._http("GET", "/api/v1/ledger/list")
        response.raise_for_status()
        return {int(ledger) for ledger in response.json()}

    def ensemble_of(self, ledger_id: int) -> set[str] | None:
        """The bookie ids a ledger's entries were written to (every ensemble of its
        metadata), None when its metadata is gone."""
        response = self._http("GET", f"/api/v1/ledger/metadata?ledger_id={ledger_id}")
        if response.status_code == 404 or (response.is_success and not response.content):
            return None
        response.raise_for_status()
        metadata = response.json()[str(ledger_id)]
        return {member["id"] for members in metadata["allEnsembles"].values() for member in members}

    def gc(self) -> None:
        """Ask for a garbage collection now (it runs in the background)."""
        self._http("PUT", "/api/v1/bookie/gc", 60).raise_for_status()

    def entry_log_bytes(self) -> int:
        """What the bookie keeps of entries on disk: its entry logs' sizes."""
        total = 0
        for path in (self.ledger_dir / "current").glob("*.log"):
            with contextlib.suppress(FileNotFoundError):  # collected meanwhile
                total += path.stat().st_size
        return total
