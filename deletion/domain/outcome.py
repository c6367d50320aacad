"""What was done with a pending deletion: one vocabulary from the deleter to the metrics and
the CLI. A `Verdict` (decision.py) says what may be done; an `Outcome` says what was."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from deletion.domain.message import PendingDeleteLedgerInfo


class Outcome(Enum):
    # The values are what operators see: metric labels, the CLI's output, log events.
    DELETED = "deleted"  # this run deleted the ledger (or its offloaded copy)
    ALREADY_GONE = "already_gone"  # there was nothing left to delete
    RECONSUMED = "reconsumed"  # sent to the retry topic, to be checked again later
    ARCHIVED = "archived"  # moved to the archive, for an operator
    REQUEUED = "requeued"  # an archive drain sent it back to phase one, with a fresh count
    REARCHIVED = "rearchived"  # an archive drain archived it again, with the new reason
    # What a dry run would have done.
    WOULD_DELETE = "would_delete"
    WOULD_REQUEUE = "would_requeue"
    WOULD_REARCHIVE = "would_rearchive"


class Result(NamedTuple):
    """What was done with one pending deletion, and why (a named tuple: one a message)."""

    outcome: Outcome
    reason: str
    info: PendingDeleteLedgerInfo | None = None  # None: the message did not decode
