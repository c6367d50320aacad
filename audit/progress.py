"""Progress while scanning: the tasks of the running Spark stages, drawn with rich."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark import SparkContext
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


def _tasks(context: SparkContext) -> tuple[int, int]:
    """(completed, total) tasks over the stages running now."""
    tracker = context.statusTracker()
    done = total = 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            done, total = done + info.numCompletedTasks, total + info.numTasks
    return done, total


class ScanProgress:
    """One line per step on `console` (stderr by default); a bar of Spark tasks meanwhile."""

    def __init__(self, context: SparkContext, console: Console, poll_seconds: float = 0.2) -> None:
        self._context = context
        self._console = console
        self._poll = poll_seconds
        self.timings: list[tuple[str, float]] = []  # each step's description and seconds
        self.jobs: list[tuple[str, int]] = []  # each step's description and Spark jobs run

    @contextmanager
    def step(self, description: str) -> Iterator[None]:
        """Follow the Spark jobs run inside the block: a bar of their tasks on a terminal (off
        one, nobody sees it, and nothing asks Spark for it), and their number after."""
        progress = self._bar()
        task = progress.add_task(description, total=None)
        stop = threading.Event()

        def poll() -> None:
            while not stop.wait(self._poll):
                done, total = _tasks(self._context)
                if total:
                    progress.update(task, completed=done, total=total)

        watcher = threading.Thread(target=poll, name="audit-progress", daemon=True)
        watching = self._console.is_terminal
        tracker = self._context.statusTracker()
        jobs_before = set(tracker.getJobIdsForGroup())
        started = time.monotonic()
        with progress:
            if watching:
                watcher.start()
            try:
                yield
            finally:
                stop.set()
                if watching:
                    watcher.join()
        elapsed = time.monotonic() - started
        self.timings.append((description, round(elapsed, 3)))
        self.jobs.append((description, len(set(tracker.getJobIdsForGroup()) - jobs_before)))
        # Unwrapped: a file's path or a store's URL is copied whole.
        self._console.print(f"{description}: done in {elapsed:.1f} s", soft_wrap=True)

    @contextmanager
    def counter(self, description: str, total: int) -> Iterator[Callable[[int], None]]:
        """A bar the caller advances (driver-side work, e.g. enqueueing)."""
        progress = self._bar()
        task = progress.add_task(description, total=total)
        with progress:
            yield lambda n: progress.advance(task, n)

    def _bar(self) -> Progress:
        return Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._console,
            transient=True,
            disable=not self._console.is_terminal,
        )
