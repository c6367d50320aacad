"""One bench step in a fresh forked process, so that every step starts from the same state
(and its peak RSS is its own): its value comes back through a pipe, its error is raised."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any


def in_child(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in a forked child; its (picklable) value."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_run, args=(function, args, sender))
    child.start()
    sender.close()
    try:
        result: tuple[bool, Any] = receiver.recv()
    finally:
        child.join()
    ok, value = result
    if not ok:
        raise RuntimeError(f"{function.__name__} failed in its child: {value}")
    return value


def _run(function: Callable[..., Any], args: tuple[Any, ...], sender: Any) -> None:
    try:
        sender.send((True, function(*args)))
    except Exception as exc:  # reported to the parent, which raises it
        sender.send((False, repr(exc)))
    finally:
        sender.close()
