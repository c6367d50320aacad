"""A key's creation time on etcd, which records revisions and no times.

Pulsar's own etcd store reports a creation time of 0 (`EtcdMetadataStore.java` builds every
`Stat` with `creationTimestamp` 0). Here a time of 0 would make every ledger look 55 years old,
and a ledger's age is what lets the deleter remove a ledger no snapshot can vouch for. So this
clock answers with a time *no earlier* than the truth: the first moment this process saw the
cluster at or past the revision in question. Every answer etcd gives carries the cluster's
current revision in its header; a key created at revision R existed by the time any answer
showed revision R or later. An age is thereby underestimated, never overestimated: a ledger
created before the process started looks as old as the process, which only delays deletions.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

from core.clock import WallClock, wall_clock

CAPACITY = 4096


class RevisionClock:
    """Checkpoints (revision, ms) observed from answer headers, both strictly increasing.

    Dropping a checkpoint other than the newest only makes answers later, so the memory is
    bounded by thinning old checkpoints: old times grow coarser, never earlier.
    """

    def __init__(self, clock: WallClock = wall_clock, capacity: int = CAPACITY) -> None:
        self._clock = clock
        self._capacity = max(capacity, 4)
        self._revisions: list[int] = []
        self._times: list[int] = []
        self._cluster: str | None = None
        self._lock = threading.Lock()

    def observe(self, header: Mapping[str, Any]) -> None:
        """Note that the cluster had reached `header["revision"]` by now (after the answer)."""
        revision = int(header.get("revision", 0))
        cluster = str(header.get("cluster_id", ""))
        now = int(self._clock() * 1000)
        with self._lock:
            if cluster != self._cluster:
                # Another cluster, or one rebuilt: its revisions may have started over.
                self._cluster = cluster
                self._revisions.clear()
                self._times.clear()
            at = bisect_left(self._revisions, revision)
            if at < len(self._times) and self._times[at] <= now:
                return  # an earlier time is already known for this revision
            # Answers arrive out of order across threads: older checkpoints with later times
            # say less than this one and go.
            first = at
            while first > 0 and self._times[first - 1] >= now:
                first -= 1
            last = at + 1 if at < len(self._revisions) and self._revisions[at] == revision else at
            self._revisions[first:last] = [revision]
            self._times[first:last] = [now]
            if len(self._revisions) > self._capacity:
                self._thin()

    def time_of(self, revision: int) -> int:
        """Milliseconds since the epoch, no earlier than when `revision` was committed."""
        with self._lock:
            at = bisect_left(self._revisions, revision)
            if at < len(self._times):
                return self._times[at]
        # Not seen yet (a concurrent reset): now is late enough.
        return int(self._clock() * 1000)

    def _thin(self) -> None:
        """Drop every other checkpoint of the older half; the newest ones stay exact."""
        half = len(self._revisions) // 2
        self._revisions[:half] = self._revisions[:half:2]
        self._times[:half] = self._times[:half:2]
