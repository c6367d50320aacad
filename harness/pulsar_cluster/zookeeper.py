"""A ZooKeeper of the ensemble: `bin/pulsar zookeeper` with `PULSAR_ZK_CONF`, its `server.N`
lines naming every member on loopback, and a `myid` in its data directory.

Readiness and the leader come from ZooKeeper's own four-letter words on the client port:
`ruok` answers `imok` when the server runs, `srvr` says `Mode: leader|follower` once it is
in a quorum (a server without one says it is not serving requests).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.pulsar_cluster.node import JvmNode
from harness.pulsar_dist import Distribution
from harness.pulsar_standalone import read_settings
from ledger_janitor.demo.embedded import free_port

OVERRIDES = Path(__file__).parents[1] / "pulsar" / "cluster" / "zookeeper.conf"


@dataclass(frozen=True)
class Member:
    """One `server.N=127.0.0.1:peer:election` line of the ensemble."""

    myid: int
    client_port: int
    peer_port: int
    election_port: int

    @classmethod
    def on_free_ports(cls, myid: int) -> Member:
        return cls(myid, free_port(), free_port(), free_port())

    @property
    def line(self) -> tuple[str, str]:
        return f"server.{self.myid}", f"127.0.0.1:{self.peer_port}:{self.election_port}"


def four_letter(port: int, word: str, timeout: float = 5.0) -> str:
    """ZooKeeper's answer to a four-letter word on 127.0.0.1:`port` ('' if none)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(word.encode())
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return ""
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperNode(JvmNode):
    command = "zookeeper"
    conf_variable = "PULSAR_ZK_CONF"
    conf_name = "zookeeper.conf"

    def __init__(
        self,
        member: Member,
        ensemble: Sequence[Member],
        root: Path,
        dist: Distribution,
        memory: Mapping[str, str],
    ) -> None:
        super().__init__(f"zookeeper-{member.myid}", root, dist, memory)
        self.member = member
        self.ensemble = tuple(ensemble)
        self.metrics_port = free_port()

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.member.client_port}"

    def settings(self) -> dict[str, object]:
        return {
            **read_settings(OVERRIDES),
            "dataDir": self.data_dir,
            "clientPort": self.member.client_port,
            "clientPortAddress": "127.0.0.1",
            "metricsProvider.httpPort": self.metrics_port,
            **dict(member.line for member in self.ensemble),
        }

    def prepare(self) -> None:
        (self.data_dir / "myid").write_text(f"{self.member.myid}\n")

    def mode(self) -> str | None:
        """'leader', 'follower' (or 'standalone'), None when not serving."""
        for line in four_letter(self.member.client_port, "srvr").splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def ready(self) -> bool:
        return (
            self.running
            and four_letter(self.member.client_port, "ruok") == "imok"
            and (self.mode() in ("leader", "follower"))
        )
