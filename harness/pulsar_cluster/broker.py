"""A broker: `bin/pulsar broker` with `PULSAR_BROKER_CONF`, its own `broker.conf` made from
the distribution's (keys replaced where they stand), on loopback ports of its own.

That file is also what the sidecar next to it reads (`ledger-janitor run -c`), as an
operator runs it. Ready: `GET /admin/v2/brokers/health` answers `ok` (the broker produces and
consumes on its heartbeat topic, so its bookies are up too).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import httpx

from harness.pulsar_cluster.node import JvmNode
from harness.pulsar_dist import Distribution
from harness.pulsar_standalone import read_settings
from ledger_janitor.demo.embedded import free_port

OVERRIDES = Path(__file__).parents[1] / "pulsar" / "cluster" / "broker.conf"


class Broker(JvmNode):
    command = "broker"
    conf_variable = "PULSAR_BROKER_CONF"
    conf_name = "broker.conf"

    def __init__(
        self,
        index: int,
        cluster_name: str,
        metadata_url: str,
        root: Path,
        dist: Distribution,
        memory: Mapping[str, str],
        extra: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(f"broker-{index}", root, dist, memory)
        self.cluster_name = cluster_name
        self.metadata_url = metadata_url  # zk:host:port,host:port,...
        self.port, self.web_port = free_port(), free_port()
        self.extra = dict(extra or {})

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def broker_id(self) -> str:
        """How the cluster names this broker (lookups, `destinationBroker`, leader election)."""
        return f"127.0.0.1:{self.web_port}"

    def settings(self) -> dict[str, object]:
        return {
            **read_settings(OVERRIDES),
            "metadataStoreUrl": self.metadata_url,
            "configurationMetadataStoreUrl": self.metadata_url,
            "clusterName": self.cluster_name,
            "brokerServicePort": self.port,
            "webServicePort": self.web_port,
            "advertisedAddress": "127.0.0.1",
            "bindAddress": "127.0.0.1",
            "narExtractionDirectory": self.root / "nar",
            **self.extra,
        }

    def ready(self) -> bool:
        try:
            with httpx.Client(timeout=30, trust_env=False) as http:
                answer = http.get(f"{self.web_url}/admin/v2/brokers/health")
        except httpx.HTTPError:
            return False
        return self.running and answer.status_code == 200 and answer.text == "ok"
