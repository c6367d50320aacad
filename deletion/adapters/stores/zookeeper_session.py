"""Since when a kazoo client has been connected without a break.

The deleter acts only on what it read during the current connection (a snapshot from before a
break, or a pause of this process past its session, is read again), and, with the age rule on,
only once the connection is `metadataStoreSessionTimeoutMillis` old: a ZooKeeper ensemble that
lost its quorum keeps its sessions, so a broker's metadata write pending since before the
outage lands right after it (Pulsar's ZKMetadataStore retries a ConnectionLoss every 100 ms,
within its session), however long the outage lasted: see `decision.decide_recordable`.

kazoo calls the listener on its connection thread for every change: SUSPENDED (the connection
is lost, the session may survive), LOST (the session expired) and CONNECTED (again, with the
old session or a new one). Each CONNECTED starts a new `since`. Stopping the client on
purpose also reports LOST: `stopping()` first unhooks the listener, so that no "expired" line
is logged for it.
"""

from __future__ import annotations

import threading

import structlog
from kazoo.client import KazooClient, KazooState

from core.clock import WallClock, wall_clock
from deletion.domain.ports import Session

log = structlog.get_logger(__name__)


class SessionWatch:
    def __init__(self, client: KazooClient, clock: WallClock = wall_clock) -> None:
        self._client = client
        self._clock = clock
        self._lock = threading.Lock()
        self._session = Session(bool(client.connected), clock())
        self._id = self._session_id()
        client.add_listener(self._changed)

    def stopping(self) -> None:
        """The store is closed (its client about to be stopped): a LOST now is no expiry."""
        self._client.remove_listener(self._changed)

    def _session_id(self) -> str:
        client_id = self._client.client_id
        return f"0x{client_id[0]:x}" if client_id else "none"

    def _changed(self, state: str) -> None:
        with self._lock:
            if state == KazooState.CONNECTED:
                self._session = Session(True, self._clock())
            else:  # SUSPENDED or LOST: nothing read so far counts after it
                self._session = Session(False, self._session.since)
        # kazoo's own thread: the log call queues the line and returns (ledger_janitor.logs).
        if state == KazooState.LOST:
            log.warning("zookeeper session expired", session=self._id)
        elif state == KazooState.CONNECTED:
            before, self._id = self._id, self._session_id()
            log.info("zookeeper connected again", session=self._id, new_session=before != self._id)

    def session(self) -> Session:
        with self._lock:
            return self._session
