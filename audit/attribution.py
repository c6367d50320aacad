"""Attribution: which topic, namespace and component a ledger belongs to, from its metadata.

Pure DataFrame functions. Pulsar writes `application=pulsar` and `component` on every ledger
it creates; a managed-ledger or cursor ledger also names its managed ledger
(`pulsar/managed-ledger=tenant/ns/persistent/<encoded local name>`, a cursor ledger adds
`pulsar/cursor`), a schema ledger its schema id (`pulsar/schemaId=tenant/ns/<encoded name>`).

A compacted ledger names its topic in full (`pulsar/compactedTopic=persistent://tenant/ns/
<local name>`), and so does a delayed-delivery bucket snapshot (`pulsar/delayedIndexTopic`):
their `component` column is their kind (message.LedgerKind), which the enqueue step carries in
the message's properties. A compacted ledger is attributable only once its topic's broker said
the topic reads another (audit.compaction); the worker then checks the rest (kinds.py).

A ledger is attributable only when these name a topic exactly as Pulsar spells it, so that
the worker's ownership check (`deletion.domain.decision.check_ownership`) will accept the message:
Spark's `url_encode`/`url_decode` are Java's URLEncoder/URLDecoder, the functions Pulsar
uses, and a name that does not survive the round trip is not attributed. Everything else is
listed with a reason and never enqueued.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from audit.schema import FOREIGN, UNATTRIBUTABLE, UNKNOWN
from deletion.domain.message import LedgerComponent, LedgerKind

_PART: Final = r"[-=:.\w]+"  # Pulsar's NamedEntity rule; Java's \w is ASCII-only
_ML_NAME: Final = rf"^({_PART})/({_PART})/persistent/([^/]+)$"
_SCHEMA_ID: Final = rf"^({_PART})/({_PART})/([^/]+)$"
_FULL_NAME: Final = rf"^persistent://({_PART})/({_PART})/([^/]+)$"  # as TopicName.toString
# Java's TopicName.getPartitionIndex: canonical digits of an int (`t-partition-01` is no
# partition); the int bound is checked after the match.
_PARTITION: Final = r".-partition-(0|[1-9][0-9]{0,9})$"
_MAX_PARTITION: Final = 2**31 - 1


# What attribution reads of a ledger's custom metadata, as columns of their own: the
# aggregated audit attributes once per distinct combination of them, not once per ledger.
UNREADABLE: Final = "meta_unreadable"
_KEYS: Final = {
    "meta_application": "application",
    "meta_component": "component",
    "meta_managed_ledger": "pulsar/managed-ledger",
    "meta_cursor": "pulsar/cursor",
    "meta_schema_id": "pulsar/schemaId",
    "meta_compacted_topic": "pulsar/compactedTopic",
    "meta_bucket_topic": "pulsar/delayedIndexTopic",
}
# A compacted ledger its topic's broker said the topic no longer reads (audit.compaction).
STALE_COMPACTED: Final = "compaction_stale"
KEY_COLUMNS: Final = (UNREADABLE, STALE_COMPACTED, *_KEYS)
COMPACTED_LEDGER: Final = "compacted-ledger"  # the component Pulsar's compactor writes
BUCKET_LEDGER: Final = "delayed-index-bucket"  # BookkeeperBucketSnapshotStorage's


_UNKNOWN_COMPACTED: Final = (
    "a compacted ledger: its topic's __compaction cursor records the current one in the "
    "cursor's own ledger, out of the metadata's reach, and no broker said (webServiceUrl)"
)
_UNNAMED_KIND: Final = (
    "its topic (pulsar/compactedTopic or pulsar/delayedIndexTopic) is not a topic name"
)


def attribution_keys(stale_compacted: Collection[int] = ()) -> list[Column]:
    """The `KEY_COLUMNS` that `attribute_keys` reads, taken from `custom_metadata` (and
    `ledger_id`: whether it is one of `stale_compacted`)."""
    stale = sf.col("ledger_id").isin(sorted(stale_compacted)) if stale_compacted else sf.lit(False)
    return [
        sf.col("custom_metadata").isNull().alias(UNREADABLE),
        stale.alias(STALE_COMPACTED),
        *(
            sf.try_element_at(sf.col("custom_metadata"), sf.lit(key)).alias(column)
            for column, key in _KEYS.items()
        ),
    ]


def _meta(key: str) -> Column:
    return sf.col(next(column for column, name in _KEYS.items() if name == key))


def _name_parts(name: Column, pattern: str) -> tuple[Column, Column, Column]:
    """(tenant, namespace, encoded local name); each '' when the name does not match."""
    return (
        sf.regexp_extract(name, pattern, 1),
        sf.regexp_extract(name, pattern, 2),
        sf.regexp_extract(name, pattern, 3),
    )


def attribute(ledgers: DataFrame, stale_compacted: Collection[int] = ()) -> DataFrame:
    """Add `topic`, `namespace`, `component` (a LedgerComponent value), `kind` and `reason`."""
    keys = attribution_keys(stale_compacted)
    return attribute_keys(ledgers.select("*", *keys)).drop(*KEY_COLUMNS)


def attribute_keys(ledgers: DataFrame) -> DataFrame:
    """`attribute`, reading the `KEY_COLUMNS` (see `attribution_keys`) instead of the map.

    `kind` is null for an attributable ledger, FOREIGN for one without `application=pulsar`,
    UNKNOWN for a compacted ledger no broker said its topic no longer reads, and
    UNATTRIBUTABLE otherwise, with the `reason`; the three name columns are set only
    for an attributable ledger. Attributable is a positive condition in which a null
    anywhere counts as false, never a fall-through of the reasons.
    """
    application, component = _meta("application"), _meta("component")
    managed_ledger, cursor, schema_id = (
        _meta("pulsar/managed-ledger"),
        _meta("pulsar/cursor"),
        _meta("pulsar/schemaId"),
    )
    is_ml, is_schema = component == "managed-ledger", component == "schema"
    is_compacted, is_bucket = component == COMPACTED_LEDGER, component == BUCKET_LEDGER
    stale = sf.col(STALE_COMPACTED)
    # Of a kind, and enqueueable as such: a bucket, or a compacted ledger its broker disowned.
    is_kind = is_bucket | (is_compacted & stale)
    full_name = sf.when(is_compacted, _meta("pulsar/compactedTopic")).otherwise(
        _meta("pulsar/delayedIndexTopic")
    )
    ml_parts = _name_parts(managed_ledger, _ML_NAME)
    schema_parts = _name_parts(schema_id, _SCHEMA_ID)
    kind_parts = _name_parts(full_name, _FULL_NAME)
    tenant, namespace, encoded = (
        sf.when(is_ml, ml).when(is_schema, schema).when(is_kind, kind)
        for ml, schema, kind in zip(ml_parts, schema_parts, kind_parts, strict=True)
    )
    # A full name is not encoded; the others are, and must survive the round trip.
    local = sf.when(is_kind, encoded).otherwise(sf.try_url_decode(encoded))
    well_named = (
        (encoded != "")
        & (is_kind | (sf.url_encode(local) == encoded))
        & ~local.isin("", ".", "..")
        & ~local.contains("/")
        & ~tenant.isin(".", "..")
        & ~namespace.isin(".", "..")
    )
    is_partition = local.rlike(_PARTITION) & (
        sf.regexp_extract(local, _PARTITION, 1).cast("long") <= _MAX_PARTITION
    )
    is_pulsar = application == "pulsar"
    unknown = sf.coalesce(is_pulsar & is_compacted & ~stale, sf.lit(False))
    attributable = sf.coalesce(
        is_pulsar
        & (
            (is_ml & managed_ledger.isNotNull())
            | (is_schema & schema_id.isNotNull())
            | (is_kind & full_name.isNotNull())
        )
        & ~(is_schema & (cursor.isNotNull() | is_partition))
        & well_named,
        sf.lit(False),
    )
    why = (
        sf.when(sf.col(UNREADABLE), "custom metadata unreadable")
        .when(~sf.coalesce(is_pulsar, sf.lit(False)), "no application=pulsar")
        .when(component.isNull(), "no component")
        .when(unknown, _UNKNOWN_COMPACTED)
        .when(is_kind, _UNNAMED_KIND)
        .when(
            ~(is_ml | is_schema),
            sf.concat(sf.lit("component "), component, sf.lit(" is not deletable by the protocol")),
        )
        .when(is_ml & managed_ledger.isNull(), "no pulsar/managed-ledger")
        .when(is_schema & schema_id.isNull(), "no pulsar/schemaId")
        .when(is_schema & cursor.isNotNull(), "a schema ledger with pulsar/cursor")
        .when(encoded == "", "malformed topic name")
        .when(~sf.coalesce(well_named, sf.lit(False)), "topic name not encoded as Pulsar does")
        .when(is_schema & is_partition, "schema id names a partition")
        .otherwise("not attributable")
    )
    foreign = ~sf.col(UNREADABLE) & ~sf.coalesce(is_pulsar, sf.lit(False))
    ledger_component = (
        sf.when(is_compacted, sf.lit(LedgerKind.COMPACTED_LEDGER.value))
        .when(is_bucket, sf.lit(LedgerKind.DELAYED_INDEX_BUCKET.value))
        .when(is_schema, sf.lit(LedgerComponent.SCHEMA_STORAGE.value))
        .when(cursor.isNotNull(), sf.lit(LedgerComponent.MANAGED_CURSOR.value))
        .otherwise(sf.lit(LedgerComponent.MANAGED_LEDGER.value))
    )
    owner_namespace = sf.concat(tenant, sf.lit("/"), namespace)
    return ledgers.select(
        "*",
        sf.when(attributable, sf.concat(owner_namespace, sf.lit("/"), local)).alias("topic"),
        sf.when(attributable, owner_namespace).alias("namespace"),
        sf.when(attributable, ledger_component).alias("component"),
        sf.when(attributable, sf.lit(None).cast("string"))
        .when(foreign, sf.lit(FOREIGN))
        .when(unknown, sf.lit(UNKNOWN))
        .otherwise(sf.lit(UNATTRIBUTABLE))
        .alias("kind"),
        sf.when(attributable, sf.lit(None).cast("string")).otherwise(why).alias("reason"),
    )
