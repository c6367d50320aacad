"""Topic names as Pulsar spells and encodes them, and the per-namespace deletion topics."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from urllib.parse import quote_plus, unquote_plus

from core.errors import DecodeError

DELETION_TOPIC = "__ledger_deletion"
ARCHIVE_TOPIC = "__ledger_deletion_archive"
SUBSCRIPTION = "ledger-deletion-worker"
# The archive's own subscription, made before its first message and read by `archive ...`.
ARCHIVE_SUBSCRIPTION = "ledger-janitor-archive"
RETRY_SUFFIX = "-RETRY"

_PARTITION = re.compile(r"^(?P<base>.*)-partition-(?P<index>\d+)$")
# Pulsar's NamedEntity rule for tenants and namespaces (Java's \w is ASCII-only).
_NAME_PART = re.compile(r"[-=:.\w]+", re.ASCII)
_MAX_PARTITION = 2**31 - 1  # Java parses the suffix as an int; past that it is no partition


def _valid_name_part(part: str) -> bool:
    return _NAME_PART.fullmatch(part) is not None and part not in (".", "..")


def _partition(local_name: str) -> re.Match[str] | None:
    """Java's `TopicName.getPartitionIndex`: the digits after the last `-partition-` must be
    the canonical form of a non-negative int, so `t-partition-01` is no partition
    (pulsar-common/src/main/java/org/apache/pulsar/common/naming/TopicName.java)."""
    match = _PARTITION.match(local_name)
    if match is None:
        return None
    index = int(match["index"])
    canonical = len(str(index)) == len(match["index"])
    return match if canonical and index <= _MAX_PARTITION else None


def java_url_encode(text: str) -> str:
    """Encode as java.net.URLEncoder does (UTF-8): keeps [A-Za-z0-9.-*_], space becomes '+'."""
    return quote_plus(text, safe="*").replace("~", "%7E")


def java_url_decode(text: str) -> str:
    return unquote_plus(text)


@dataclass(frozen=True, order=True)
class NamespaceName:
    tenant: str
    namespace: str

    @classmethod
    def parse(cls, text: str) -> NamespaceName:
        parts = text.split("/")
        if len(parts) != 2 or not all(_valid_name_part(p) for p in parts):
            raise DecodeError(f"not a namespace name 'tenant/namespace': {text!r}")
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return self._text

    @functools.cached_property
    def _text(self) -> str:  # once: every deletion's reasons and log lines spell it
        return f"{self.tenant}/{self.namespace}"

    def __hash__(self) -> int:
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:  # once: names key the caches every deletion looks up
        return hash((self.tenant, self.namespace))

    def topic(self, local_name: str) -> str:
        return f"persistent://{self}/{local_name}"

    @property
    def deletion_topic(self) -> str:
        return self.topic(DELETION_TOPIC)

    @property
    def archive_topic(self) -> str:
        return self.topic(ARCHIVE_TOPIC)

    @property
    def retry_topic(self) -> str:
        """The Java client's default retry topic: '<topic>-<subscription>-RETRY'."""
        return f"{self.deletion_topic}-{SUBSCRIPTION}{RETRY_SUFFIX}"


@dataclass(frozen=True, order=True)
class TopicName:
    """A persistent topic: `tenant/namespace/local`, where `local` may end in `-partition-N`."""

    namespace: NamespaceName
    local_name: str

    @classmethod
    def parse(cls, text: str) -> TopicName:
        """Accept `persistent://t/ns/local` or the domain-less `t/ns/local` of the message."""
        rest = text
        if "://" in text:
            domain, rest = text.split("://", 1)
            if domain != "persistent":
                raise DecodeError(f"only persistent topics own ledgers: {text!r}")
        parts = rest.split("/", 2)
        if len(parts) != 3 or not parts[2] or "/" in parts[2]:
            raise DecodeError(f"not a topic name 'tenant/namespace/topic': {text!r}")
        if parts[2] in (".", ".."):
            raise DecodeError(f"not a topic name: {text!r}")
        partition = _partition(parts[2])
        if partition is not None and not partition["base"]:
            # Java reads `-partition-5` as partition 5 of a blank local name, which its
            # TopicName then refuses ("Topic local name must not be blank"): so does a broker.
            raise DecodeError(f"not a topic name: {text!r} is a partition of a blank name")
        return cls(NamespaceName.parse(f"{parts[0]}/{parts[1]}"), parts[2])

    def __str__(self) -> str:
        """The domain-less form carried in `PendingDeleteLedgerInfo.topicName`."""
        return self._text

    @functools.cached_property
    def _text(self) -> str:  # once: every deletion's reasons and log lines spell it
        return f"{self.namespace}/{self.local_name}"

    def __hash__(self) -> int:
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:  # once: names key the caches every deletion looks up
        return hash((self.namespace, self.local_name))

    @property
    def full_name(self) -> str:
        return self.namespace.topic(self.local_name)

    @property
    def partition_index(self) -> int | None:
        match = _partition(self.local_name)
        return int(match["index"]) if match else None

    @property
    def base(self) -> TopicName:
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        match = _partition(self.local_name)
        return TopicName(self.namespace, match["base"]) if match else self

    @property
    def managed_ledger_name(self) -> str:
        """`tenant/ns/persistent/<encoded local>`: the znode name and `pulsar/managed-ledger`."""
        return f"{self.namespace}/persistent/{java_url_encode(self.local_name)}"

    @property
    def schema_id(self) -> str:
        """`tenant/ns/<encoded base local>`: schemas are shared by all partitions."""
        return f"{self.namespace}/{java_url_encode(self.base.local_name)}"


def managed_ledger_path(topic: TopicName) -> str:
    return f"/managed-ledgers/{topic.managed_ledger_name}"


def schema_path(topic: TopicName) -> str:
    return f"/schemas/{topic.schema_id}"


@functools.lru_cache(maxsize=4096)
def namespace_of_deletion_topic(topic: str) -> NamespaceName:
    """The namespace a message came from, given the (partition of the) topic it arrived on.
    Cached: every message asks, and a worker hears from only a few topics."""
    parsed = TopicName.parse(topic)
    base = parsed.base.local_name
    if base not in (DELETION_TOPIC, ARCHIVE_TOPIC) and not base.startswith(DELETION_TOPIC + "-"):
        raise DecodeError(f"not a ledger-deletion topic: {topic!r}")
    return parsed.namespace
