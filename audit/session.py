"""The SparkSession an audit runs in: local mode by default, or whatever spark-submit gives.

Executors import this project's packages (`audit`, `deletion`, `config`, ...). In local mode
the Python workers get them through PYTHONPATH, set here before the JVM starts; on a
cluster, ship them with `spark-submit --py-files` or install the distribution on the nodes.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyspark import SparkConf
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Spark's JVM logs a failed task's whole Java stack trace; the audit reports the cause in its
# one `error:` line instead. Only fatal JVM messages reach stderr, unless the operator gave
# spark.driver.extraJavaOptions (their own log4j2 configuration) themselves.
LOG4J2 = """\
rootLogger.level = fatal
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = fatal
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# PySpark 4 records, for every DataFrame function called, the Python line that called it, to
# show in the JVM's error messages (pyspark/errors/utils.py, `_with_origin`): each call reads
# the setting, walks the stack and tries to import IPython and ipykernel, then sets and clears
# that origin in the JVM. That tripled the py4j round trips building the audit's query (3,600
# against 1,500) and cost a small audit about a second; the audit names what failed in its
# own `error:` line. An operator who sets it (spark-submit --conf) keeps their value.
DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"


def _quiet_jvm_options() -> str:
    """`-Dlog4j2.configurationFile=` a file holding LOG4J2 (written once per process)."""
    path = Path(tempfile.gettempdir()) / f"ledger-janitor-audit-log4j2-{os.getpid()}.properties"
    if not path.exists():
        path.write_text(LOG4J2)
        atexit.register(path.unlink, missing_ok=True)
    return f"-Dlog4j2.configurationFile={path.as_uri()}"


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
    given = SparkConf().contains(DRIVER_JAVA_OPTIONS) or DRIVER_JAVA_OPTIONS in (extra or {})
    quiet = local and not given
    if quiet:
        builder = builder.config(DRIVER_JAVA_OPTIONS, _quiet_jvm_options())
    if local:
        builder = builder.config("spark.ui.enabled", "false")
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions or 8))
    elif shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if not SparkConf().contains(DATAFRAME_DEBUGGING):
        builder = builder.config(DATAFRAME_DEBUGGING, "false")
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL" if quiet else "ERROR")
    return OwnedSession(spark, owned=True)


ROWS_PER_SHUFFLE_PARTITION = 100_000


@contextmanager
def shuffle_partitions_for(spark: SparkSession, rows: int) -> Iterator[None]:
    """No more shuffle partitions than `rows` fill at ROWS_PER_SHUFFLE_PARTITION each, while
    inside: a few dozen ledgers are not spread over 8 tasks a stage (each a task to schedule
    on a JVM still loading its classes). The setting as it was is put back after."""
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    wanted = max(1, -(-rows // ROWS_PER_SHUFFLE_PARTITION))
    if before is None or not before.isdigit() or wanted >= int(before):
        yield
        return
    spark.conf.set(key, str(wanted))
    try:
        yield
    finally:
        spark.conf.set(key, before)
