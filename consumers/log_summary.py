"""What `run` says at INFO while it works: one `worked` line a period in which anything was
done, not a line a message.

A line a deletion cost the worker a quarter of its rate under load (bench.worker_logging),
and a log of thousands of identical lines a minute is one nobody reads. So each message's
outcome (`deleted`, `already gone`, `reconsumed`) is a DEBUG line (`run -v`), and every
`every` seconds in which the worker did anything, one INFO line says what:

    {"event": "worked", "seconds": 10.0, "deleted": 1873, "already_gone": 2, "reconsumed": 40,
     "archived": 0, "handed_back": 0, "namespaces": ["tenant/a", "tenant/b"]}

naming the deleted ledgers too (`deleted_ledgers`) when there were few (at most
NAMED), as on a quiet cluster, where an operator looks for one. Every message stays countable
in the metrics (`ledger_janitor_messages_handled_total{outcome}`), and an archive (rare, and what an
admin acts on) keeps its own INFO line. The last period is said when the worker stops.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from consumers.observer import Observer
from deletion.domain.outcome import Outcome, Result
from deletion.domain.topics import NamespaceName

log = structlog.get_logger(__name__)

EVERY_SECONDS = 10.0
NAMED = 20  # deleted ledgers named in a `worked` line; above it, a count only


class LogSummary(Observer):
    """Counts what the worker did since its last `worked` line; `say` writes that line (the
    worker calls it every period and once when it stops). Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since = clock()
        self._counts: Counter[str] = Counter()
        self._deleted: list[int] = []
        self._namespaces: set[NamespaceName] = set()

    def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
        self.on_handled_batch([(namespace, result)], seconds)

    def on_handled_batch(
        self, handled: Sequence[tuple[NamespaceName, Result]], seconds: float
    ) -> None:
        with self._lock:
            for namespace, result in handled:
                outcome = result.outcome
                self._counts[outcome.value] += 1
                self._namespaces.add(namespace)
                if outcome is Outcome.DELETED and result.info and len(self._deleted) <= NAMED:
                    self._deleted.append(result.info.ledger_id)

    def on_handed_back(self, namespace: NamespaceName, archived: bool) -> None:
        with self._lock:
            self._counts["archived" if archived else "handed_back"] += 1
            self._namespaces.add(namespace)

    def take(self) -> dict[str, Any] | None:
        """What was done since the last call (and starts a new period); None if nothing."""
        now = self._clock()
        with self._lock:
            counts, deleted, namespaces = self._counts, self._deleted, self._namespaces
            seconds, self._since = now - self._since, now
            self._counts, self._deleted, self._namespaces = Counter(), [], set()
        if not counts:
            return None
        fields: dict[str, Any] = {"seconds": round(seconds, 1)}
        for outcome in ("deleted", "already_gone", "reconsumed", "archived", "handed_back"):
            fields[outcome] = counts.get(outcome, 0)
        fields["namespaces"] = sorted(map(str, namespaces))
        if deleted and len(deleted) <= NAMED:
            fields["deleted_ledgers"] = sorted(deleted)
        return fields

    def say(self) -> None:
        """The `worked` line of the period now ending, if anything was done in it."""
        fields = self.take()
        if fields is not None:
            log.info("worked", **fields)
