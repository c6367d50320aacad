"""The shapes of the audit's DataFrames, and of the files an offline audit reads.

Inventory (one row per ledger that exists; JSON lines or Parquet):

| column | type | meaning |
| --- | --- | --- |
| `ledger_id` | long, required | the BookKeeper ledger id |
| `ctime_ms` | long, nullable | creation time, ms since the epoch; null = unknown, never an orphan |
| `custom_metadata` | map<string,string>, nullable | custom metadata (UTF-8); null = unreadable |
| `size` | long, optional | bytes, when known (a closed ledger's length) |

References (one row per reference Pulsar metadata holds; JSON lines or Parquet):

| column | type | meaning |
| --- | --- | --- |
| `ledger_id` | long, required | the referenced ledger |
| `topic` | string, optional | `tenant/namespace/local-name` of the referring topic |
| `component` | string, optional | MANAGED_LEDGER, MANAGED_CURSOR, SCHEMA_STORAGE or COMPACTED |
| `bookkeeper_deleted` | boolean, optional | offloaded and deleted from BookKeeper: absent is fine |

A scanned reference also carries what ManagedLedgerInfo says of an offloaded ledger
(`offload_uuid`, `offload_complete`, `offload_driver`, `offload_bucket`) and its `entries` and
`size`; a references file does not, so the tiered-storage audit needs the metadata scan.
Offloaded objects and the missing-data report: `OFFLOADED_OBJECT_SCHEMA` and `MISSING_*` below.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql.types import (
    BooleanType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

INVENTORY_SCHEMA: Final = StructType(
    [
        StructField("ledger_id", LongType(), nullable=False),
        StructField("ctime_ms", LongType(), nullable=True),
        StructField("custom_metadata", MapType(StringType(), StringType()), nullable=True),
        StructField("size", LongType(), nullable=True),
    ]
)

REFERENCE_SCHEMA: Final = StructType(
    [
        StructField("ledger_id", LongType(), nullable=False),
        StructField("topic", StringType(), nullable=True),
        StructField("namespace", StringType(), nullable=True),
        StructField("component", StringType(), nullable=True),
        StructField("bookkeeper_deleted", BooleanType(), nullable=False),
    ]
)

# What the metadata scan emits: the references, plus what ManagedLedgerInfo says of each ledger.
SCANNED_REFERENCE_SCHEMA: Final = StructType(
    [
        *REFERENCE_SCHEMA.fields,
        StructField("offload_uuid", StringType(), nullable=True),
        StructField("offload_complete", BooleanType(), nullable=True),
        StructField("offload_driver", StringType(), nullable=True),
        StructField("offload_bucket", StringType(), nullable=True),
        StructField("entries", LongType(), nullable=True),
        StructField("size", LongType(), nullable=True),
    ]
)

# One offloaded object (S3: the data or the index object; filesystem: a MapFile directory).
OFFLOADED_OBJECT_SCHEMA: Final = StructType(
    [
        StructField("store", StringType(), nullable=False),  # s3 | filesystem
        StructField("location", StringType(), nullable=False),  # bucket | base path
        StructField("key", StringType(), nullable=False),  # object key | relative directory
        StructField("ledger_id", LongType(), nullable=False),
        StructField("uuid", StringType(), nullable=False),
        StructField("role", StringType(), nullable=False),  # data | index | mapfile
        StructField("complete", BooleanType(), nullable=False),  # a MapFile with data and index
        StructField("bytes", LongType(), nullable=True),
        StructField("mtime_ms", LongType(), nullable=True),
        StructField("managed_ledger", StringType(), nullable=True),  # proven by its metadata
        StructField("topic", StringType(), nullable=True),
        StructField("namespace", StringType(), nullable=True),
        StructField("problem", StringType(), nullable=True),  # conflicting: never attributable
        StructField("silence", StringType(), nullable=True),  # why it proves nothing itself
    ]
)

# What the missing-data report says is gone: BookKeeper metadata, or offloaded objects.
MISSING_BOOKKEEPER: Final = "bookkeeper"
MISSING_OFFLOADED: Final = "tiered storage"

# Reference components: where in Pulsar's metadata a ledger id was found.
MANAGED_LEDGER: Final = "MANAGED_LEDGER"
MANAGED_CURSOR: Final = "MANAGED_CURSOR"
SCHEMA_STORAGE: Final = "SCHEMA_STORAGE"
COMPACTED: Final = "COMPACTED"
DELAYED_BUCKET: Final = "DELAYED_BUCKET"

# The status of an unreferenced ledger. Only ORPHAN is ever enqueued.
ORPHAN: Final = "orphan"  # old enough, attributable to a topic and a deletable component
UNATTRIBUTABLE: Final = "unattributable"  # Pulsar's, but no topic/component can be proven
FOREIGN: Final = "foreign"  # not written by Pulsar (no application=pulsar)
YOUNG: Final = "young"  # inside the grace period, or of unknown age
# Whether anything still reads it, the metadata cannot tell and no broker answered: a
# compacted ledger, whose topic's __compaction cursor records the current one in its own
# ledger (audit.compaction). Never "unreferenced".
UNKNOWN: Final = "unknown"
STATUSES: Final = (ORPHAN, UNATTRIBUTABLE, FOREIGN, YOUNG, UNKNOWN)
