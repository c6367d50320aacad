"""The tiered-storage arithmetic on small DataFrames (real Spark, local mode)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from audit.offload import classify
from audit.schema import OFFLOADED_OBJECT_SCHEMA, SCANNED_REFERENCE_SCHEMA

NOW, GRACE = 1_000_000, 1000
OLD, NEW = NOW - 5000, NOW - 10
ML, TOPIC, NS = "a/b/persistent/t", "a/b/t", "a/b"
STALE = "the ledger's metadata names another offload (a failed or retried one)"
U1, U2, U3, U4, U5, U6 = (f"0000000{i}-0000-0000-0000-000000000000" for i in range(1, 7))


def obj(ledger: int, uuid: str, role: str, mtime: int | None = OLD, **kw: Any) -> tuple[Any, ...]:
    store = "filesystem" if role == "mapfile" else "s3"
    named = kw.get("named", ML)
    return (store, "b", f"{uuid}-{ledger}-{role}", ledger, uuid, role, kw.get("complete", True),
            10, mtime, named, TOPIC if named else None, NS if named else None,
            kw.get("problem"), None if named or kw.get("problem") else "silent")  # fmt: skip


def ref(ledger: int, uuid: str | None, complete: bool = True, **kw: Any) -> tuple[Any, ...]:
    return (ledger, TOPIC, NS, "MANAGED_LEDGER", False, uuid, complete if uuid else None,
            kw.get("driver", "aws-s3" if uuid else None), kw.get("bucket"), 3, 30)  # fmt: skip


def test_copies_are_classified_on_ledger_and_uuid(spark: SparkSession) -> None:
    objects = spark.createDataFrame(
        [
            obj(1, U1, "data"), obj(1, U1, "index"),  # referenced
            obj(1, U2, "data"), obj(1, U2, "index"),  # the same ledger, another offload
            obj(2, U3, "data"), obj(2, U3, "index", mtime=NEW),  # one object is young
            obj(3, U4, "data"), obj(3, U4, "index", named=None, problem="names x"),
            obj(4, U5, "data", named=None), obj(4, U5, "index"),  # silent data, proving index
            obj(5, U6, "mapfile", mtime=None),
        ],
        OFFLOADED_OBJECT_SCHEMA,
    )  # fmt: skip
    references = spark.createDataFrame([ref(1, U1), ref(2, None)], SCANNED_REFERENCE_SCHEMA)
    copies = classify.copies(objects)
    rows = {
        (r["ledger_id"], r["uuid"]): (r["status"], r["reason"], r["topic"])
        for r in classify.classify_copies(copies, references, NOW, GRACE).collect()
    }
    assert rows == {
        (1, U2): ("orphan", STALE, TOPIC),
        (2, U3): ("young", "written within the grace period", TOPIC),
        (3, U4): ("unattributable", "names x", None),
        (4, U5): ("orphan", "no metadata references the ledger", TOPIC),
        (5, U6): ("young", "modification time unknown", TOPIC),
    }  # fmt: skip


def test_missing_offloads_are_judged_only_where_the_audit_looked(spark: SparkSession) -> None:
    objects = spark.createDataFrame(
        [obj(1, U1, "data"), obj(1, U1, "index"), obj(2, U2, "data"),
         obj(6, U6, "mapfile", complete=False)],
        OFFLOADED_OBJECT_SCHEMA,
    )  # fmt: skip
    references = spark.createDataFrame(
        [
            ref(1, U1),  # all there
            ref(2, U2),  # the index object is gone
            ref(3, U3),  # all gone
            ref(4, U4, complete=False),  # still being written: nothing is missing yet
            ref(5, U5, bucket="elsewhere"),  # not in the listed bucket: not judged
            ref(6, U6, driver="filesystem"),  # a MapFile without its index
            ref(7, U1, driver="google-cloud-storage"),
        ],
        SCANNED_REFERENCE_SCHEMA,
    )
    gone = classify.missing_offloaded(
        references, classify.copies(objects), s3_bucket="b", s3_drivers={"aws-s3"},
        filesystem=True, default_driver=None,
    )  # fmt: skip
    found = {(r["ledger_id"], r["store"], r["entries"]) for r in gone.collect()}
    assert found == {(2, "s3", 3), (3, "s3", 3), (6, "filesystem", 3)}
