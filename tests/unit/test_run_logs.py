"""Pure parts of `run`'s logging and operations port: the Pulsar client's log lines as ours,
our lines as JSON, and why a metrics port could not be opened, in one line."""

from __future__ import annotations

import errno
import io
import json
import logging
import socket

import structlog

from ledger_janitor import logs
from ledger_janitor.sidecar.endpoint import bind_failure


def test_a_client_line_keeps_its_level_and_source() -> None:
    line = (
        "2026-11-26 18:51:11.452 WARN  [140091349] ClientConnection:485 | "
        "[127.0.0.1:1 -> 127.0.0.1:2] Connection refused\n"
    )
    level, text, fields = logs.client_log_record(line)
    assert level == logging.WARNING
    assert text == "[127.0.0.1:1 -> 127.0.0.1:2] Connection refused"
    assert fields == {"source": "ClientConnection:485"}
    assert logs.client_log_record("not a client line\n") == (
        logging.WARNING,
        "not a client line",
        {},
    )


def test_our_lines_and_other_libraries_are_json_on_one_stream() -> None:
    stream = io.StringIO()
    logs.configure(logging.INFO, json_output=True, stream=stream)
    try:
        structlog.get_logger("ours").info("deleted", ledger_id=7, auth_params="token:x")
        structlog.get_logger("ours").debug("dropped")
        logging.getLogger("kazoo.client").warning("a warning kazoo says at every retry")
        logging.getLogger("httpx").warning("one of httpx's")
    finally:
        logs.configure(logging.WARNING)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["deleted", "one of httpx's"]
    assert lines[0]["logger"] == "ours" and lines[0]["ledger_id"] == 7
    assert lines[0]["auth_params"] == "***" and lines[0]["level"] == "info"


def test_bind_failures_name_the_setting() -> None:
    in_use = OSError(errno.EADDRINUSE, "Address already in use")
    assert bind_failure("127.0.0.1", 9464, in_use).startswith(
        "metrics port 127.0.0.1:9464 is in use"
    )
    unresolved = socket.gaierror(-2, "Name or service not known")
    assert "metricsBindAddress" in bind_failure("nowhere.invalid", 9464, unresolved)
    assert "out of range" in bind_failure("127.0.0.1", 70000, OverflowError("port"))
    not_here = OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
    assert "not an address of this machine" in bind_failure("10.9.9.9", 9464, not_here)
