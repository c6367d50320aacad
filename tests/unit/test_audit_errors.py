"""How a failed Spark job is said in the audit's one `error:` line."""

from __future__ import annotations

from audit.errors import describe_failure

JVM = """An error occurred while calling o48.parquet.
: org.apache.spark.SparkException: [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered error \
while reading file file:/tmp/bad.parquet. Could not read footer.
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFooterForFileError(Q.scala:1109)
\tat java.base/java.lang.Thread.run(Thread.java:840)
Caused by: java.lang.RuntimeException: file:/tmp/bad.parquet is not a Parquet file (length is \
too low: 8)
\tat org.apache.parquet.hadoop.ParquetFileReader.readFooter(ParquetFileReader.java:599)
"""

PYTHON_IN_TASK = """org.apache.spark.SparkException: Job aborted due to stage failure:
Traceback (most recent call last):
  File "/x/worker.py", line 1, in main
audit.errors.AuditError: bucket 00/0000: ZooKeeper went away
Caused by: org.apache.spark.api.python.PythonException: Traceback
"""


def test_a_jvm_failure_is_its_innermost_cause_not_its_stack() -> None:
    assert describe_failure(Exception(JVM)) == (
        "RuntimeException: file:/tmp/bad.parquet is not a Parquet file (length is too low: 8)"
    )


def test_a_python_error_raised_in_a_task_wins_over_the_jvm_wrapping() -> None:
    assert describe_failure(Exception(PYTHON_IN_TASK)) == (
        "AuditError: bucket 00/0000: ZooKeeper went away"
    )


def test_otherwise_the_first_line() -> None:
    assert describe_failure(Exception("\n  something broke  \nmore")) == "something broke"
