"""The audit's one error type, and how a failed Spark job is reported."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from core.errors import JanitorError

T = TypeVar("T")


class AuditError(JanitorError):
    """The audit cannot give a trustworthy answer; nothing was enqueued after it."""


_OUR_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w*Error): (.+)$")
_JAVA_CAUSE = re.compile(r"^Caused by: (?:[\w$]+\.)*([\w$]+): (.+)$")


def describe_failure(exc: BaseException) -> str:
    """The most telling line of an exception raised on an executor.

    Spark wraps a Python error raised in a task in a JVM exception whose text holds the
    task's whole traceback; the last `SomethingError: message` line is the cause. A JVM
    failure's text is its stack: the last `Caused by:` line is the cause.
    """
    lines = [line.strip() for line in str(exc).splitlines()]
    causes = [m for line in lines if (m := _OUR_ERROR.match(line))]
    python_causes = [m for m in causes if not m.group(1).startswith("Py4J")]
    if python_causes:
        cause = python_causes[-1]
        return f"{cause.group(1)}: {cause.group(2)}"
    # A JVM failure (a file Spark cannot read): its innermost cause, not the stack.
    java_causes = [m for line in lines if (m := _JAVA_CAUSE.match(line))]
    if java_causes:
        cause = java_causes[-1]
        return f"{cause.group(1)}: {cause.group(2)}"[:500]
    first = next((line for line in lines if line), type(exc).__name__)
    return first[:500]


def spark_job(what: str, job: Callable[[], T]) -> T:
    """Run a Spark job; a task's failure (a scan's, a malformed file's) aborts the audit."""
    try:
        return job()
    except JanitorError:
        raise
    except Exception as exc:  # a task's error arrives wrapped by Spark
        raise AuditError(f"{what} failed, audit aborted: {describe_failure(exc)}") from exc
