"""The SparkSession an audit runs in: local mode by default, or whatever spark-submit gives.

Executors import this project's packages (`audit`, `deletion`, `config`, ...). In local mode
the Python workers get them through PYTHONPATH, set here before the JVM starts; on a
cluster, ship them with `spark-submit --py-files` or install the distribution on the nodes.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from pyspark import SparkConf
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class OwnedSession:
    """A session and whether this process created it (and so must stop it)."""

    spark: SparkSession
    owned: bool

    def close(self) -> None:
        if self.owned:
            self.spark.stop()


def _prepare_local_workers() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(PROJECT_ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT), *paths])


def open_session(
    master: str | None = None,
    shuffle_partitions: int | None = None,
    extra: dict[str, str] | None = None,
) -> OwnedSession:
    """The active session if there is one (a test's, a notebook's), else a new one.

    `master` None means: spark-submit's `--master` when spark-submit started this Python,
    else `spark.master` if set, else local mode.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return OwnedSession(active, owned=False)
    # Under spark-submit the JVM that launched this Python holds --master; SparkConf() cannot
    # see it before the gateway is up, and the builder picks it up when given no master.
    submitted = master is None and "PYSPARK_GATEWAY_PORT" in os.environ
    chosen = master or ("" if submitted else SparkConf().get("spark.master") or DEFAULT_MASTER)
    local = chosen.startswith("local")
    if local:
        _prepare_local_workers()
    builder = SparkSession.builder.appName("ledger-janitor-audit").config(
        "spark.ui.showConsoleProgress", "false"
    )
    if chosen:
        builder = builder.master(chosen)
    if local:
        builder = builder.config("spark.ui.enabled", "false")
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions or 8))
    elif shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return OwnedSession(spark, owned=True)
