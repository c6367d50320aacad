"""Structured logs: JSON lines when stderr is not a terminal, readable lines when it is.

Our own lines go through structlog alone (a level-filtering bound logger writing to the
stream; nothing is spent on a line below the level, and a line above it costs its rendering
only); other libraries' lines (kazoo, httpx, ...) are handed to the same writer, and the
Pulsar C++ client's own log comes through `client_log_path` (see there). Context bound with
`structlog.contextvars` (ledger id, topic, namespace, message id) lands on every line.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import re
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any, TextIO

import structlog

SECRET_KEYS = ("token", "auth_params", "authparams", "password", "secret", "credential")
QUIET_LIBRARIES = ("kazoo", "botocore", "boto3", "urllib3", "httpx", "httpcore", "pulsar")
CLIENT_LOGGER = "pulsar.client"


@functools.lru_cache(maxsize=1024)
def _is_secret(key: str) -> bool:
    # Cached: a process logs the same few keys over and over.
    lowered = key.lower()
    return any(secret in lowered for secret in SECRET_KEYS)


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event):
        if _is_secret(key):
            event[key] = "***"
    return event


class _Output:
    """Where every line goes. A logging thread only queues its rendered line (with the
    stream it is meant for); one writer thread writes what is queued, all of it at once,
    and flushes: no thread doing work waits on a write (and, after it, on the interpreter
    lock). Loggers are cached on first use, so they reach the stream through here: a later
    `configure` redirects them too."""

    lock = threading.Lock()
    stream: TextIO = sys.stderr
    queue: SimpleQueue[tuple[TextIO, str] | threading.Event] = SimpleQueue()
    writer: threading.Thread | None = None

    @classmethod
    def put(cls, line: str) -> None:
        if cls.writer is None:
            cls.start()
        cls.queue.put((cls.stream, line))

    @classmethod
    def start(cls) -> None:
        with cls.lock:
            if cls.writer is None:
                cls.writer = threading.Thread(target=cls._write_loop, name="log", daemon=True)
                cls.writer.start()

    @classmethod
    def _write_loop(cls) -> None:
        while True:
            cls._write([cls.queue.get(), *cls._queued()])

    @classmethod
    def _queued(cls) -> list[tuple[TextIO, str] | threading.Event]:
        items: list[tuple[TextIO, str] | threading.Event] = []
        while True:
            try:
                items.append(cls.queue.get_nowait())
            except Empty:
                return items

    @classmethod
    def _write(cls, items: list[tuple[TextIO, str] | threading.Event]) -> None:
        by_stream: dict[TextIO, list[str]] = {}
        for item in items:
            if isinstance(item, threading.Event):
                cls._write_out(by_stream)
                by_stream = {}
                item.set()
            else:
                by_stream.setdefault(item[0], []).append(item[1])
        cls._write_out(by_stream)

    @staticmethod
    def _write_out(by_stream: dict[TextIO, list[str]]) -> None:
        for stream, lines in by_stream.items():
            try:
                stream.write("\n".join(lines) + "\n")
                stream.flush()
            except (ValueError, OSError):  # closed under us: a log line never breaks work
                pass

    @classmethod
    def flush(cls, timeout: float = 2.0) -> None:
        """Return once every line queued so far is written (at exit, before `os._exit`, or
        before the stream changes)."""
        writer = cls.writer
        if writer is not None and writer.is_alive() and writer is not threading.current_thread():
            written = threading.Event()
            cls.queue.put(written)
            if written.wait(timeout):
                return
        cls._write(cls._queued())

    @classmethod
    def after_fork(cls) -> None:
        cls.lock = threading.Lock()
        cls.queue = SimpleQueue()
        cls.writer = None


os.register_at_fork(after_in_child=_Output.after_fork)
atexit.register(_Output.flush)


def flush() -> None:
    """Every line logged so far, written: before an exit that skips `atexit`."""
    _Output.flush()


class _NamedWriter:
    """structlog's WriteLogger, through `_Output`, named for the `logger` field."""

    def __init__(self, name: str) -> None:
        self.name = name

    def msg(self, message: str) -> None:
        _Output.put(message)

    log = debug = info = warn = warning = error = err = fatal = exception = critical = msg


class _ToStructlog(logging.Handler):
    """Other libraries' standard-library records, written by the same writer as ours."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            fields: dict[str, Any] = {}
            if record.exc_info:
                fields["exc_info"] = record.exc_info
            structlog.get_logger(record.name).log(record.levelno, record.getMessage(), **fields)
        except Exception:  # a broken log line must never break the caller
            self.handleError(record)


def configure(
    level: int = logging.INFO, json_output: bool | None = None, stream: TextIO | None = None
) -> None:
    """Every line to `stream` (stderr unless given): JSON unless it is a terminal."""
    stream = stream or sys.stderr
    json_output = not stream.isatty() if json_output is None else json_output
    renderer: Any = (
        structlog.processors.JSONRenderer() if json_output else structlog.dev.ConsoleRenderer()
    )
    _Output.flush()  # what was logged before goes where it was meant to
    _Output.stream = stream
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact,
            renderer,
        ],
        # A line below the level is a no-op method: nothing is spent on it.
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *args: _NamedWriter(str(args[0]) if args else ""),
        cache_logger_on_first_use=True,
    )
    root = logging.getLogger()
    root.handlers = [_ToStructlog()]
    root.setLevel(level)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    # kazoo warns at every reconnection attempt (several a second while ZooKeeper is away);
    # the sidecar says once that the metadata store was lost and once that it is back.
    logging.getLogger("kazoo").setLevel(max(level, logging.ERROR))


def always(name: str) -> Any:
    """A logger of `name` whose lines are written whatever the level: for the few an operator
    must see even under `--quiet`, such as `run`'s start-up line, which names the stores and
    broker it will use. Its lines keep their own level (`info`) in the output."""
    return structlog.wrap_logger(
        None,
        wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET),
        logger_factory_args=(name,),
    )


# The C++ client's line: `2026-11-26 18:51:11.452 WARN  [140091] ClientConnection:485 | text`.
_CLIENT_LINE = re.compile(
    r"^\S+ \S+ (?P<level>DEBUG|INFO|WARN|ERROR)\s+\[(?P<thread>[^\]]*)\] "
    r"(?P<source>[^ ]+) \| (?P<text>.*)$"
)
_CLIENT_LEVELS = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
}


def client_log_record(line: str) -> tuple[int, str, dict[str, str]]:
    """A C++ client log line as (level, event, fields); an unparsed line is a warning."""
    found = _CLIENT_LINE.match(line.rstrip("\n"))
    if found is None:
        return logging.WARNING, line.rstrip("\n"), {}
    level = _CLIENT_LEVELS[found["level"]]
    return level, found["text"], {"source": found["source"]}


_pipe_lock = threading.Lock()
_pipe_path: Path | None = None


def client_log_path() -> Path:
    """A path the Pulsar C++ client can log to (`pulsar.FileLogger`) whose every line comes
    out as one of ours (logger `pulsar.client`, the client's level and source file:line).

    Why not `pulsar.Client(logger=logging.Logger)`: the C++ client then calls into Python,
    taking the interpreter lock, from its I/O threads for every line down to DEBUG, and
    pulsar-client 3.x's `batch_receive` holds that lock while it waits for those threads:
    the worker's first batch deadlocks (seen on 3.13). A pipe needs no lock on the C++ side:
    its lines are read by a thread of ours. One pipe a process, whatever the clients."""
    global _pipe_path
    with _pipe_lock:
        if _pipe_path is None or _pipe_path.parent.parent.name != str(os.getpid()):  # forked
            read_fd, write_fd = os.pipe()  # the write end stays open for the process's life
            threading.Thread(
                target=_forward_client_lines, args=(read_fd,), name="client-log", daemon=True
            ).start()
            _pipe_path = Path(f"/proc/{os.getpid()}/fd/{write_fd}")
        return _pipe_path


def _forward_client_lines(read_fd: int) -> None:
    log = structlog.get_logger(CLIENT_LOGGER)
    with os.fdopen(read_fd, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            level, text, fields = client_log_record(line)
            log.log(level, text, **fields)
