"""Whether a running sidecar reaches its metadata store and broker, checked on a thread of
its own: /ready and the gauges read its last answers (a probe never waits on a store), and
each loss is logged once as a warning, each recovery once as info.

The metadata store: ZooKeeper's session state (kazoo tells of a change at once; its state
listener wakes the check), else a listing of `/`. The broker: every deletion subscription
connected; with none (an idle sidecar), a TCP connect to the broker, at most every
`IDLE_BROKER_PROBE_SECONDS` so as not to fill the broker's log with connections.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from consumers.worker import DeletionWorker
from core.errors import JanitorError
from deletion.adapters.admin_api import rest_path
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.topics import ARCHIVE_SUBSCRIPTION, ARCHIVE_TOPIC, NamespaceName, TopicName
from ledger_janitor.sidecar.reachability import broker_addresses, refusal
from ledger_janitor.sidecar.wiring import Sidecar

log = structlog.get_logger(__name__)
CHECK_SECONDS = 1.0
IDLE_BROKER_PROBE_SECONDS = 10.0
PROBE_TIMEOUT_SECONDS = 2.0
# A check that has not answered for this long counts as a failed one.
STALE_SECONDS = 10.0
ARCHIVE_REFRESH_SECONDS = 30.0


@dataclass(frozen=True)
class Answer:
    ok: bool
    detail: str
    at: float


class Monitor:
    def __init__(
        self,
        sidecar: Sidecar,
        worker: DeletionWorker,
        interval: float = CHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sidecar, self._worker, self._interval, self._clock = sidecar, worker, interval, clock
        self._lock = threading.Lock()
        self._answers: dict[str, Answer] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._last_probe: Answer | None = None
        self._backlog: dict[NamespaceName, int] = {}
        self._backlog_at = -ARCHIVE_REFRESH_SECONDS
        self._thread = threading.Thread(target=self._loop, name="monitor", daemon=True)
        store = sidecar.metadata
        if isinstance(store, ZooKeeperMetadataStore):
            store.client.add_listener(lambda _state: self._wake.set())

    def start(self) -> Monitor:
        self.check()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self.check()
            except Exception:  # a bug here must not stop the checks for good
                log.exception("the reachability check failed")

    def check(self) -> None:
        now = self._clock()
        self._note("metadata store", Answer(*self._sidecar.metadata_reachable(), now))
        self._note("broker", self._broker(now))
        if self._sidecar.admin is not None and now - self._backlog_at >= ARCHIVE_REFRESH_SECONDS:
            self._backlog_at = now
            self._refresh_backlog()

    def _broker(self, now: float) -> Answer:
        if self._worker.subscribed:
            self._last_probe = None
            return Answer(*self._worker.connected(), now)
        probe = self._last_probe
        if probe is None or now - probe.at >= IDLE_BROKER_PROBE_SECONDS:
            url = self._sidecar.config.broker_service_url
            reason = refusal(broker_addresses(url), PROBE_TIMEOUT_SECONDS)
            ok = reason is None
            said = "reachable" if ok else f"unreachable: {reason}"
            probe = Answer(ok, f"broker {url} {said}", now)
            self._last_probe = probe
        return Answer(probe.ok, probe.detail, now)

    def _note(self, what: str, answer: Answer) -> None:
        with self._lock:
            before = self._answers.get(what)
            self._answers[what] = answer
        if before is None or before.ok == answer.ok:
            if before is None and not answer.ok:
                log.warning(f"{what} lost", detail=answer.detail)
            return
        if answer.ok:
            log.info(f"{what} reachable again", detail=answer.detail)
        else:
            log.warning(f"{what} lost", detail=answer.detail)

    def reachable(self, what: str) -> bool:
        with self._lock:
            answer = self._answers.get(what)
        return answer is not None and answer.ok and self._clock() - answer.at < STALE_SECONDS

    def ready(self) -> tuple[bool, str]:
        """Reaching the metadata store and the broker; an idle sidecar (no namespace to
        watch yet) is ready."""
        now = self._clock()
        with self._lock:
            answers = dict(self._answers)
        details, ok = [], True
        for what in ("metadata store", "broker"):
            answer = answers.get(what)
            if answer is None or now - answer.at >= STALE_SECONDS:
                ok = False
                details.append(f"{what}: no answer from its check for {STALE_SECONDS:g} s")
                continue
            ok = ok and answer.ok
            details.append(answer.detail)
        namespaces = len(self._worker.subscribed)
        details.append(f"watching {namespaces} namespace{'' if namespaces == 1 else 's'}")
        return ok, "; ".join(details)

    def archive_backlog(self) -> dict[NamespaceName, int] | None:
        """Per watched namespace, archived messages not yet drained; None without an admin
        URL to ask."""
        if self._sidecar.admin is None:
            return None
        with self._lock:
            return dict(self._backlog)

    def _refresh_backlog(self) -> None:
        admin = self._sidecar.admin
        assert admin is not None
        with self._lock:  # a namespace whose stats cannot be read keeps its last figure
            found = dict(self._backlog)
        for namespace in self._worker.subscribed:
            topic = TopicName(namespace, ARCHIVE_TOPIC)
            try:
                response = admin.http.request("GET", rest_path(topic, "stats"))
            except JanitorError as exc:
                log.debug("could not read the archive's stats", error=str(exc))
                continue
            if response.status_code == 404:  # nothing was ever archived there
                found[namespace] = 0
            elif response.is_success:
                found[namespace] = _archive_backlog_of(response.content)
        with self._lock:
            self._backlog = found


def _archive_backlog_of(content: bytes) -> int:
    try:
        subscriptions = json.loads(content).get("subscriptions") or {}
        return int((subscriptions.get(ARCHIVE_SUBSCRIPTION) or {}).get("msgBacklog", 0))
    except (ValueError, AttributeError, TypeError):
        return 0
