"""Whose an offloaded object is, from what Pulsar's offloaders write into it (pure Python).

The evidence is the one the worker's ownership proof reads (`deletion.adapters.offload.
ownership`, which cites the Pulsar sources): a blob's `ManagedLedgerName` user metadata
(since Pulsar 2.11) and the ledger's BookKeeper metadata the offloaders embed (the index
object's segment metadata, the MapFile's key -1). An object is attributed to a managed ledger
only when some evidence names it, none names another, and the embedded metadata, if any, is a
managed ledger's data ledger's; anything else is unattributable and never enqueued.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from deletion.adapters.offload.ownership import ledger_metadata_name, user_metadata_name
from deletion.domain.topics import TopicName, java_url_decode


@dataclass(frozen=True)
class Claim:
    """The managed ledger an object names; else a `problem` (its evidence conflicts, which
    rules out its whole copy) or a `silence` (it proves nothing, but another object may)."""

    managed_ledger: str | None
    problem: str | None = None
    silence: str | None = None


class Evidence:
    """What one object's metadata says, gathered piece by piece; `claim` judges it."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.problems: list[str] = []
        self.silences: list[str] = []

    def user_metadata(self, metadata: Mapping[str, str]) -> None:
        named = user_metadata_name(metadata)
        if named is None:
            self.silences.append("no ManagedLedgerName user metadata")
        else:
            self.names.append(named)

    def ledger_metadata(self, custom: Mapping[str, bytes]) -> None:
        named, problem = ledger_metadata_name(custom)
        if named is None:
            self.silences.append("its embedded ledger metadata names no managed ledger")
            return
        if problem is not None:
            self.problems.append(
                f"embedded metadata is not a managed ledger's data ledger's ({problem})"
            )
        self.names.append(named)

    def unreadable(self, reason: str) -> None:
        self.silences.append(f"unreadable: {reason}")

    def claim(self) -> Claim:
        distinct = sorted(set(self.names))
        if len(distinct) > 1:
            return Claim(None, f"its metadata names several managed ledgers: {distinct}")
        if self.problems:
            return Claim(None, "; ".join(self.problems))
        if not distinct:
            return Claim(None, silence="; ".join(self.silences) or "no metadata")
        return Claim(distinct[0])


def topic_of(managed_ledger: str) -> TopicName | None:
    """The topic whose managed ledger name this is, exactly as Pulsar spells it; else None."""
    parts = managed_ledger.split("/")
    if len(parts) != 4 or parts[2] != "persistent":
        return None
    try:
        topic = TopicName.parse(f"{parts[0]}/{parts[1]}/{java_url_decode(parts[3])}")
    except Exception:  # DecodeError and ValueError: not a name Pulsar would write
        return None
    return topic if topic.managed_ledger_name == managed_ledger else None
