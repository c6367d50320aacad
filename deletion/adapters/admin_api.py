"""InUseLedgers read from a broker's admin REST API: `GET .../{topic}/internalStats`.

The JSON shapes are apache/pulsar's, in `pulsar-client-admin-api/src/main/java/org/apache/
pulsar/common/policies/data/`: `ManagedLedgerInternalStats.java` (`ledgers[].ledgerId`, which
lists offloaded ledgers too, `cursors{name: {cursorLedger}}`, `lastConfirmedEntry` "L:E"),
`PersistentTopicInternalStats.java` (`schemaLedgers[].ledgerId`, `compactedLedger.ledgerId`,
-1 when never compacted: `PersistentTopic.getInternalStats`) and
`PartitionedTopicInternalStats.java` (`{"metadata": {"partitions": N}, "partitions":
{"persistent://t/ns/x-partition-0": {...}}}`). Errors are `{"reason": "..."}`
(`org/apache/pulsar/broker/web/RestException.java`, `common/policies/data/ErrorData.java`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, TypeVar

import httpx

from core.clock import EpochSeconds, WallClock, wall_clock
from core.errors import (
    DecodeError,
    MetadataError,
    TransientMetadataError,
)
from deletion.adapters.layout import require_namespace
from deletion.domain.ports import Creators, MetadataStore, TopicLedgers
from deletion.domain.references import schema_references
from deletion.domain.topics import TopicName, java_url_encode, schema_path
from transport.admin_http import AdminHttp

T = TypeVar("T")
# "Topic %s not found" (PersistentTopicsBase.getTopicNotFoundErrorMessage), and older
# brokers' "Topic not found" / "Topic does not exist": the broker looked the topic up in its
# own metadata and found none. "Namespace/Tenant does not exist" is not taken for "gone": a
# topic counts as deleted only where the metadata store holds its namespace
# (deletion.adapters.layout), and a broker that knows no such namespace is not that
# store's cluster (another webServiceUrl?) or a namespace being deleted: unknown.
_GONE = re.compile(r"\btopic\b.*\b(not found|does not exist)", re.I | re.S)
_POSITION = re.compile(r"(-?\d+):(-?\d+)")


class AdminApiInUseLedgers:
    """InUseLedgers from `internalStats`, following the broker's redirects to the topic owner.

    Any failure raises: an unanswered question is "unknown", never "not in use".
    """

    def __init__(
        self,
        http: AdminHttp,
        clock: WallClock = wall_clock,
        schemas: MetadataStore | None = None,
        where: str = "the metadata store",
    ) -> None:
        """`schemas`: the metadata store (`where` names it in errors)."""
        self._http = http
        self._clock = clock
        self._schemas = schemas
        self._where = where

    @property
    def http(self) -> AdminHttp:
        return self._http

    def __repr__(self) -> str:
        token = "<set>" if self._http.has_token else None
        base, trust = self._http.base, self._http.trust
        return f"AdminApiInUseLedgers(base_url={base!r}, token={token}, tls={trust!r})"

    def fetch(self, topic: TopicName) -> TopicLedgers:
        # Read before asking: the snapshot is at least as fresh as fetched_at, never fresher.
        fetched_at = self._clock()
        payload = self._payload(self._get(rest_path(topic, "internalStats")))
        if payload is None:
            schemas = self._schema_ledgers(topic)
            return TopicLedgers(topic, False, schemas, fetched_at, creators=Creators(None, {}))
        return _snapshot(topic, payload, fetched_at)

    def _schema_ledgers(self, topic: TopicName) -> frozenset[int]:
        """A topic the broker does not know may still have a schema (schemas outlive their
        topics until deleted on their own): read its locator from the metadata store, which
        must hold the topic's namespace for "no schema" to mean none. Without one to read,
        nothing can be said."""
        if self._schemas is None:
            raise MetadataError(
                f"topic {topic} not found, and no metadata store to read its schema from"
            )
        found = schema_references(self._schemas, schema_path(topic))
        if found is None:
            require_namespace(self._schemas, topic, self._where)
        return frozenset(ref.ledger_id for ref in found or [])

    def fetch_partitioned(self, base: TopicName) -> dict[TopicName, TopicLedgers]:
        """Every partition of a partitioned topic; empty when the broker knows no such topic."""
        if base.partition_index is not None:
            raise ValueError(f"{base} is a partition; pass the partitioned topic")
        fetched_at = self._clock()
        payload = self._payload(self._get(rest_path(base, "partitioned-internalStats")))
        if payload is None:
            return {}
        where = f"partitioned-internalStats of {base.full_name}"
        body = _as(payload, dict, where)
        (count,) = _longs([body.get("metadata")], "partitions", f"{where}: metadata")
        found: dict[TopicName, TopicLedgers] = {}
        for name, stats in _as(body.get("partitions"), dict, f"{where}: partitions").items():
            topic = TopicName.parse(name)
            index = topic.partition_index
            if topic.base != base or index is None or not 0 <= index < count:
                raise DecodeError(f"{where}: unexpected partition {name!r}")
            found[topic] = _snapshot(topic, stats, fetched_at)
        for index in range(count):
            partition = TopicName(base.namespace, f"{base.local_name}-partition-{index}")
            if partition not in found:
                # The broker silently drops partitions whose stats failed
                # (PersistentTopicsBase.internalGetPartitionedStatsInternal): ask each directly.
                found[partition] = self.fetch(partition)
        return found

    def close(self) -> None:
        self._http.close()

    def _get(self, path: str) -> httpx.Response:
        return self._http.request("GET", path)

    def _payload(self, response: httpx.Response) -> Any:
        """The decoded JSON of a 200, None for "the topic is gone", else a typed error."""
        status, url = response.status_code, response.request.url
        if status == 200:
            try:
                return json.loads(response.content)
            except ValueError as exc:
                raise DecodeError(f"{url}: malformed JSON: {exc}") from exc
        reason = self._reason(response)
        if status == 404 and "have not been generated yet" in reason:
            # Said when every partition's stats failed, so it does not mean "gone".
            raise TransientMetadataError(f"{url}: HTTP 404: {reason}")
        if status == 404 and _GONE.search(reason):
            return None
        if status in (401, 403):
            raise MetadataError(f"{url}: authentication/authorization failed ({status}) {reason}")
        if status == 429 or status >= 500:
            raise TransientMetadataError(f"{url}: HTTP {status}: {reason}")
        raise MetadataError(f"{url}: unexpected HTTP {status}: {reason}")

    def _reason(self, response: httpx.Response) -> str:
        return self._http.reason(response)


def rest_path(topic: TopicName, operation: str) -> str:
    # TopicName.getRestPath: tenant/namespace as is, local name through Codec.encode
    # (java.net.URLEncoder); the broker's validateTopicName decodes it with Codec.decode.
    ns, local = topic.namespace, java_url_encode(topic.local_name)
    return f"/admin/v2/persistent/{ns.tenant}/{ns.namespace}/{local}/{operation}"


def _snapshot(topic: TopicName, stats: object, fetched_at: EpochSeconds) -> TopicLedgers:
    where = f"internalStats of {topic.full_name}"
    body = _as(stats, dict, where)
    ledgers = _as(body.get("ledgers"), list, f"{where}: ledgers")
    cursors = _as(body.get("cursors"), dict, f"{where}: cursors")
    schemas = _as(body.get("schemaLedgers"), list, f"{where}: schemaLedgers")
    data = _longs(ledgers, "ledgerId", f"{where}: ledgers")
    cursor_ledgers = {
        name: _long(stats, "cursorLedger", f"{where}: cursors") for name, stats in cursors.items()
    }
    found = data | set(cursor_ledgers.values())
    found |= _longs(schemas, "ledgerId", f"{where}: schemaLedgers")
    found |= _longs([body.get("compactedLedger")], "ledgerId", f"{where}: compactedLedger")
    last = body.get("lastConfirmedEntry")
    match = _POSITION.fullmatch(last) if isinstance(last, str) else None
    if not ledgers and match and int(match[1]) >= 0:
        # Brokers before 2.8.4/2.9.4/2.10.2 could answer before filling `ledgers`
        # (apache/pulsar#16238); an empty list beside a written ledger is that race.
        raise TransientMetadataError(f"{where}: no ledgers although {last} was written")
    # -1 stands for "no ledger" (a cursor without one, a topic never compacted).
    creators = Creators(max(data, default=None), cursor_ledgers)
    ids = frozenset(i for i in found if i >= 0)
    return TopicLedgers(topic, True, ids, fetched_at, creators=creators)


def _as(value: object, kind: type[T], where: str) -> T:
    if not isinstance(value, kind):
        raise DecodeError(f"{where}: expected a JSON {kind.__name__}, got {type(value).__name__}")
    return value


def _longs(entries: Iterable[object], key: str, where: str) -> set[int]:
    return {_long(entry, key, where) for entry in entries}


def _long(entry: object, key: str, where: str) -> int:
    value = _as(entry, dict, where).get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise DecodeError(f"{where}: {key!r} missing or not an integer")
    return value
