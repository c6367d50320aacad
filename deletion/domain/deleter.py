"""Check, then delete, a batch of pending deletions.

Every check is made per message, exactly as for a batch of one. Only the ledger store is
batched: one pipelined read of the candidates' metadata, then one pipelined versioned
delete of those their topic still owns, instead of two round trips per message. A batch
that still fails after its transient retries (a corrupt ledger znode, a flaky store) is
redone one ledger at a time, so that one bad ledger holds back no other.

A batch acts only on what it read during one unbroken connection to its stores (`Session`):
a snapshot read before the connection's start (a cached one, from before an outage or a pause
of this process past its session) is read again, with the age rule on only one read `settle`
seconds into the connection counts (decision.decide_recordable), and if the connection breaks
between the reads and the deletes, nothing is deleted: the batch is handed back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import NamedTuple, TypeVar

from core.clock import EpochSeconds, WallClock, wall_clock
from core.errors import ConnectionBrokenError, DecodeError, JanitorError, OffloadOwnershipError
from core.retry import TransientRetry
from deletion.domain.decision import (
    Decision,
    SafetyMargins,
    Verdict,
    check_namespace,
    check_ownership,
    decide_in_use,
    decide_recordable,
)
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import LedgerType, PendingDeleteLedgerInfo
from deletion.domain.offload_port import OffloadStorage, UnsupportedOffloadDriverError
from deletion.domain.outcome import Outcome, Result
from deletion.domain.ports import Deletion, LedgerRecord, LedgerStorage, Session, TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName
from deletion.wire.offload_context import IncompleteOffloadError

V = TypeVar("V")
Record = LedgerRecord | None | JanitorError
# What became of a candidate: the deleter's Result when it settled it, or else the decision
# not to delete it now (NOT_YET or REFUSED), for the caller to act on.
Ruling = Decision | Result
SAFE = Verdict.SAFE_TO_DELETE


class Candidate(NamedTuple):
    """A pending deletion, the namespace whose deletion topic it came from, and its due time
    (a named tuple: one a message)."""

    info: PendingDeleteLedgerInfo
    namespace: NamespaceName
    not_before: EpochSeconds


def _unknown(exc: JanitorError) -> Decision:
    # Unknown is never "not in use": try again later.
    return Decision(Verdict.NOT_YET, f"cannot tell whether it is in use: {exc}")


class LedgerDeleter:
    def __init__(
        self,
        in_use: InUseLedgersCache,
        storage: LedgerStorage,
        retry: TransientRetry,
        offload: OffloadStorage | None = None,
        margins: SafetyMargins | None = None,
        clock: WallClock = wall_clock,
        session: Callable[[], Session] | None = None,
    ) -> None:
        """`session`: the stores' connection (the metadata store's and the ledger store's
        together); by default the ledger store's."""
        self.in_use = in_use
        self._storage = storage
        self._retry = retry
        self._offload = offload
        self._margins = margins or SafetyMargins()
        self._clock = clock
        self._session = session or storage.session

    def decide(self, batch: Sequence[Candidate], dry_run: bool = False) -> list[Ruling]:
        """Check each, and delete those that are safe to (unless `dry_run`): a Result says
        what was done (DELETED, ALREADY_GONE, or in a dry run WOULD_DELETE); a Decision,
        that it is not to be deleted now."""
        opened = self._session()
        snapshots = _Snapshots()
        checked = [self._checked(candidate, opened, snapshots) for candidate in batch]
        self.in_use.count_hits(snapshots.reused)
        rulings: list[Ruling] = list(checked)
        ready = [i for i, decision in enumerate(checked) if decision.verdict is SAFE]
        records = self._read([batch[i].info.ledger_id for i in ready])
        broken = self._broken(opened)
        if broken is not None:
            for i in ready:
                rulings[i] = broken
            return rulings
        versions: dict[int, int] = {}
        deleting: dict[int, list[int]] = {}  # ledger id -> the candidates it settles
        for i in ready:
            info = batch[i].info
            record = records[info.ledger_id]
            cleared = self._cleared(info, record, checked[i])
            rulings[i] = cleared
            if cleared.verdict is not SAFE:
                continue
            if info.ledger_type is LedgerType.OFFLOAD_LEDGER:
                rulings[i] = self._delete_offloaded(info, dry_run)
            elif not isinstance(record, LedgerRecord):  # cleared, so it is gone
                rulings[i] = _deleted(info, Deletion.GONE)
            elif dry_run:
                rulings[i] = Result(Outcome.WOULD_DELETE, cleared.reason, info)
            else:
                versions[info.ledger_id] = record.version
                deleting.setdefault(info.ledger_id, []).append(i)
        broken = self._broken(opened) if versions else None
        if broken is not None:
            for settled in deleting.values():
                for i in settled:
                    rulings[i] = broken
            return rulings
        deletions = self._delete(versions, opened)
        for ledger_id, settled in deleting.items():
            first, *duplicates = settled
            deletion = deletions[ledger_id]
            rulings[first] = _deleted(batch[first].info, deletion)
            if deletion is Deletion.DELETED:  # the same ledger twice in one batch: deleted once
                deletion = Deletion.GONE
            for i in duplicates:
                rulings[i] = _deleted(batch[i].info, deletion)
        return rulings

    def _broken(self, opened: Session) -> Decision | None:
        """NOT_YET for what is left of a batch whose stores' connection broke since `opened`."""
        now = self._session()
        if now == opened and now.connected:
            return None
        if not now.connected:
            return Decision(Verdict.NOT_YET, "the metadata store's connection is broken")
        return Decision(
            Verdict.NOT_YET,
            "the metadata store's connection broke during the batch: nothing read before it "
            "is acted on",
        )

    def _checked(self, candidate: Candidate, session: Session, snapshots: _Snapshots) -> Decision:
        info = candidate.info
        refused = check_namespace(info, candidate.namespace)
        if refused is not None:
            return refused
        if info.ledger_type is LedgerType.OFFLOAD_LEDGER and self._offload is None:
            return Decision(Verdict.REFUSED, "no offload storage is configured for OFFLOAD_LEDGER")
        settled = self._margins.settle_after(session.since)
        if self._clock() < settled:
            return Decision(
                Verdict.NOT_YET,
                f"the metadata store (re)connected {self._clock() - session.since:.0f}s ago: "
                f"writes held up by an outage may still land for {self._margins.settle:.0f}s",
                old_at=settled,
            )
        try:
            return self._in_use_decision(info, candidate.not_before, settled, snapshots)
        except JanitorError as exc:
            return _unknown(exc)

    def _in_use_decision(
        self,
        info: PendingDeleteLedgerInfo,
        due: EpochSeconds,
        settled: EpochSeconds,
        snapshots: _Snapshots,
    ) -> Decision:
        topic = info.topic_name
        # Without the in-use check's staleness rule, only a snapshot read now will do; and
        # never one read before the connection it was read on was settled.
        fresh_after = max(due if info.check_ledger_still_in_use else self._clock(), settled)
        snapshot = snapshots.get(topic, fresh_after)
        if snapshot is None:
            snapshot = self.in_use.cached(topic, fresh_after) or self._retry.call(
                lambda: self.in_use.lookup(topic, fresh_after)
            )
            snapshots.keep(topic, snapshot)
        return decide_in_use(info, snapshot, due)

    def _cleared(self, info: PendingDeleteLedgerInfo, record: Record, ruling: Decision) -> Decision:
        """The checks on the ledger's own record: readable, owned by the message's topic
        (a mismatch is archived at once), and such that nothing can still record it."""
        if isinstance(record, JanitorError):
            return _unknown(record)
        if record is not None:
            refused = check_ownership(info, record)
            if refused is not None:
                return refused
        assert ruling.snapshot is not None  # decide_in_use stamps every SAFE ruling
        return decide_recordable(info, record, ruling.snapshot, self._margins)

    def _read(self, ledger_ids: Sequence[int]) -> dict[int, Record]:
        return self._settled(sorted(set(ledger_ids)), self._storage.ledgers)

    def _delete(
        self, versions: Mapping[int, int], opened: Session
    ) -> dict[int, Deletion | JanitorError]:
        def delete(ids: Sequence[int]) -> Mapping[int, Deletion]:
            # Each try, the retries' too: a retry after a reconnection would act on the
            # reads of the connection that broke.
            if self._session() != opened or not opened.connected:
                raise ConnectionBrokenError("the store's connection broke since the batch's reads")
            return self._storage.delete_ledgers({i: versions[i] for i in ids})

        return self._settled(list(versions), delete)

    def _settled(
        self, ledger_ids: Sequence[int], operation: Callable[[Sequence[int]], Mapping[int, V]]
    ) -> dict[int, V | JanitorError]:
        """The batch's results, or each one's error."""
        if not ledger_ids:
            return {}
        try:
            return dict(self._retry.call(partial(operation, ledger_ids)))
        except JanitorError:
            pass  # one bad or unlucky ledger must not hold back the others: one at a time
        results: dict[int, V | JanitorError] = {}
        for ledger_id in ledger_ids:
            try:
                results.update(self._retry.call(partial(operation, [ledger_id])))
            except JanitorError as exc:
                results[ledger_id] = exc
        return results

    def _delete_offloaded(self, info: PendingDeleteLedgerInfo, dry_run: bool) -> Ruling:
        """Delete the offloaded copy (a BookKeeper copy, if any, was checked like any
        ledger's); the offloaded objects must name this ledger and topic themselves."""
        offload, context = self._offload, info.ledger_info
        assert offload is not None and context is not None  # checked in _checked and decode
        if dry_run:
            why = f"offloaded ledger {info.ledger_id} may be deleted"
            return Result(Outcome.WOULD_DELETE, why, info)
        name = info.topic_name.managed_ledger_name
        try:
            deleted = self._retry.call(
                lambda: offload.delete_offloaded(info.ledger_id, context, name)
            )
        except IncompleteOffloadError as exc:
            return Decision(Verdict.NOT_YET, f"offload still in progress: {exc}")
        except (DecodeError, UnsupportedOffloadDriverError, OffloadOwnershipError) as exc:
            return Decision(Verdict.REFUSED, f"cannot delete offloaded ledger: {exc}")
        except JanitorError as exc:
            return _unknown(exc)
        if not deleted:
            why = f"offloaded ledger {info.ledger_id} is already gone"
            return Result(Outcome.ALREADY_GONE, why, info)
        why = f"deleted offloaded ledger {info.ledger_id} of {info.topic_name}"
        return Result(Outcome.DELETED, why, info)


class _Snapshots:
    """A batch's in-use snapshots by topic: a batch names the same few topics over and over,
    and a snapshot the cache gave one message serves the others it is fresh enough for
    (what the cache would answer them, at a tenth of its cost)."""

    def __init__(self) -> None:
        self._by_topic: dict[TopicName, TopicLedgers] = {}
        self.reused = 0

    def get(self, topic: TopicName, fresh_after: EpochSeconds) -> TopicLedgers | None:
        snapshot = self._by_topic.get(topic)
        if snapshot is None or snapshot.fetched_at < fresh_after:
            return None
        self.reused += 1
        return snapshot

    def keep(self, topic: TopicName, snapshot: TopicLedgers) -> None:
        self._by_topic[topic] = snapshot


def _deleted(info: PendingDeleteLedgerInfo, deletion: Deletion | JanitorError) -> Ruling:
    ledger_id = info.ledger_id
    if isinstance(deletion, JanitorError):
        return _unknown(deletion)
    if deletion is Deletion.CHANGED:
        return Decision(Verdict.NOT_YET, f"ledger {ledger_id} changed while deleting")
    if deletion is Deletion.GONE:
        return Result(Outcome.ALREADY_GONE, f"ledger {ledger_id} is already gone", info)
    return Result(Outcome.DELETED, f"deleted ledger {ledger_id} of {info.topic_name}", info)
