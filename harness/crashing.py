"""Crash injection for cursor persistence: every mutating call is a numbered step, and the
chosen step raises a BaseException before it happens, as a killed process would stop."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.domain.message import PendingDeleteLedgerInfo
from deletion.domain.ports import ANY_VERSION, MetadataStore, PendingDeletions, Stat

T = TypeVar("T")


class SimulatedCrash(BaseException):
    """Not an Exception: nothing may catch it and carry on."""


class Trap:
    """Counts steps; raises at step `at` (never when `at` is None)."""

    def __init__(self, at: int | None = None) -> None:
        self.at = at
        self.steps: list[str] = []

    def step(self, name: str) -> None:
        self.steps.append(name)
        if self.at is not None and len(self.steps) == self.at:
            raise SimulatedCrash(f"crash before step {self.at}: {name}")


class CrashingLedgers:
    def __init__(self, real: SqliteLedgerStorage, trap: Trap) -> None:
        self._real, self._trap = real, trap

    def create_ledger(self, custom_metadata: Mapping[str, bytes]) -> int:
        self._trap.step("create_ledger")
        return self._real.create_ledger(custom_metadata)

    def append(self, ledger_id: int, data: bytes) -> int:
        self._trap.step("append")
        return self._real.append(ledger_id, data)

    def read(self, ledger_id: int, first: int = 0, last: int | None = None) -> list[bytes]:
        return self._real.read(ledger_id, first, last)

    def close_ledger(self, ledger_id: int) -> None:
        self._trap.step("close_ledger")
        self._real.close_ledger(ledger_id)


class CrashingMetadata:
    def __init__(self, real: MetadataStore, trap: Trap) -> None:
        self._real, self._trap = real, trap

    def set(self, path: str, data: bytes, expected_version: int = ANY_VERSION) -> Stat:
        self._trap.step("compare_and_set")
        return self._real.set(path, data, expected_version)

    def create(self, path: str, data: bytes) -> Stat:
        self._trap.step("create_znode")
        return self._real.create(path, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class RecordingDeletions:
    """The real phase one, remembering every pending deletion the broker acknowledged."""

    def __init__(self, real: PendingDeletions, trap: Trap | None = None) -> None:
        self._real, self._trap = real, trap or Trap()
        self.enqueued: list[PendingDeleteLedgerInfo] = []

    def enqueue(self, infos: Sequence[PendingDeleteLedgerInfo]) -> list[Any]:
        self._trap.step("phase_one")
        ids = self._real.enqueue(infos)
        self.enqueued.extend(infos)
        return ids

    def enqueue_then_commit(
        self, infos: Sequence[PendingDeleteLedgerInfo], commit: Callable[[], T]
    ) -> T:
        def committed() -> T:
            self.enqueued.extend(infos)
            self._trap.step("commit")
            return commit()

        if infos:
            self._trap.step("phase_one")
        return self._real.enqueue_then_commit(infos, committed)

    @property
    def ledger_ids(self) -> list[int]:
        return [info.ledger_id for info in self.enqueued]
