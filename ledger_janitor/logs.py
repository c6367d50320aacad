"""Structured logs: JSON lines when stderr is not a terminal, readable lines when it is.

Every library's logging goes through the same renderer, and context bound with
`structlog.contextvars` (ledger id, topic, namespace, message id) lands on every line.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

SECRET_KEYS = ("token", "auth_params", "authparams", "password", "secret", "credential")
QUIET_LIBRARIES = ("kazoo", "botocore", "boto3", "urllib3", "httpx", "httpcore", "pulsar")


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


def configure(
    level: int = logging.INFO, json_output: bool | None = None, stream: TextIO | None = None
) -> None:
    """Every line to `stream` (stderr unless given): JSON unless it is a terminal."""
    stream = stream or sys.stderr
    json_output = not stream.isatty() if json_output is None else json_output
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _redact,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer() if json_output else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        # A line below the level is dropped first, before any work is spent on it.
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
