"""One local SparkSession for every audit test (root fixtures come from tests/conftest.py).

Without PySpark (the `[audit]` extra) these tests are not collected, and the header says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

try:
    import pyspark  # noqa: F401
except ImportError:
    collect_ignore_glob = ["test_*.py"]

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def pytest_report_header() -> list[str]:
    if "collect_ignore_glob" in globals():
        return ["tests/audit: not collected, PySpark missing (pip install '.[audit]')"]
    return []


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """local[2], loopback only, no UI, two shuffle partitions."""
    from audit.session import open_session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = open_session(
        "local[2]",
        shuffle_partitions=2,
        extra={"spark.ui.enabled": "false", "spark.default.parallelism": "2"},
    )
    assert session.owned, "another SparkSession is already active in this process"
    yield session.spark
    session.spark.stop()
    stop_gateway()


def stop_gateway() -> None:
    """The JVM outlives SparkSession.stop() until Python exits: end it with the session."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.stdin.close()  # the JVM exits when its stdin closes
        process.wait(timeout=60)
    SparkContext._gateway = None
    SparkContext._jvm = None
