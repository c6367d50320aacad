"""An independent census of a namespace's ledgers on the real broker: which ledgers exist
that name one of its topics, and which of them the broker references. Nothing of the
product's audit, reference walk or admin client is used: BookKeeper's `/ledgers` tree is
read raw with kazoo (tests/reliability/raw_ledgers.py), each ledger's custom metadata parsed
here (rig.ledger_metadata), and the references are what the broker itself answers
(`internalStats` of every topic and partition it lists in the namespace) together with the
schema locators it keeps under `/schemas/<tenant>/<ns>/<topic>` (read raw: a schema outlives
its topic there).

The keys naming a topic are those of Pulsar 4.0's
managed-ledger/src/main/java/org/apache/bookkeeper/mledger/impl/LedgerMetadataUtils.java:
`pulsar/managed-ledger` (data and cursor ledgers, `tenant/ns/persistent/topic`; a partition's
ledgers name the partition),
`pulsar/schemaId` (`tenant/ns/topic`), `pulsar/compactedTopic` and
`pulsar/delayedIndexTopic` (`persistent://tenant/ns/topic`)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import quote

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from deletion.domain.topics import NamespaceName
from deletion.wire.proto.schema_storage_format_pb2 import SchemaLocator
from harness.pulsar_admin import BrokerAdmin
from tests.real_pulsar import rig

NAMING = ("pulsar/managed-ledger", "pulsar/schemaId", "pulsar/compactedTopic",
          "pulsar/delayedIndexTopic")  # fmt: skip


def _topic_named(metadata: dict[str, str], namespace: NamespaceName) -> str | None:
    """The local name (partition suffix off) of the namespace's topic the ledger names."""
    for key in NAMING:
        value = metadata.get(key, "")
        for prefix in (f"{namespace}/persistent/", f"{namespace}/", f"persistent://{namespace}/"):
            if value.startswith(prefix):
                return re.sub(r"-partition-(0|[1-9][0-9]*)$", "", value.removeprefix(prefix))
    return None


@dataclass
class Census:
    zk: KazooClient
    admin: BrokerAdmin
    namespaces: tuple[NamespaceName, ...]
    # Topics not judged (the broker's own, say), by local name.
    ignored_topics: tuple[str, ...] = ()
    # A ledger's custom metadata is written once, when it is created: read once.
    _metadata: dict[int, dict[str, str]] = field(default_factory=dict)

    def ledgers(self) -> dict[int, dict[str, str]]:
        """Every ledger in BookKeeper whose custom metadata names a topic of the namespaces,
        with that metadata."""
        found = {}
        for ledger in rig.bookkeeper_ledgers(self.zk):
            if ledger not in self._metadata:
                try:
                    self._metadata[ledger] = rig.ledger_metadata(self.zk, ledger)
                except NoNodeError:  # deleted meanwhile
                    continue
            metadata = self._metadata[ledger]
            named = {_topic_named(metadata, namespace) for namespace in self.namespaces}
            if named - {None, *self.ignored_topics}:
                found[ledger] = metadata
        return found

    def referenced(self) -> set[int]:
        """What the broker references: every topic's internalStats, every schema locator."""
        found: set[int] = set()
        for namespace in self.namespaces:
            for topic in self.admin.get(
                f"/admin/v2/persistent/{namespace}?includeSystemTopic=true"
            ):
                local = topic.rsplit("/", 1)[-1]
                path = f"/admin/v2/persistent/{namespace}/{quote(local, safe='')}/internalStats"
                stats = self.admin.get(path, 404)
                if stats is None or "ledgers" not in stats:  # deleted meanwhile
                    continue
                found |= {ledger["ledgerId"] for ledger in stats["ledgers"]}
                found |= {cursor["cursorLedger"] for cursor in stats["cursors"].values()}
                found |= {ledger["ledgerId"] for ledger in stats.get("schemaLedgers", [])}
                found.add(stats.get("compactedLedger", {}).get("ledgerId", -1))
            found |= self._schema_locators(namespace)
        return {ledger for ledger in found if ledger >= 0}

    def _schema_locators(self, namespace: NamespaceName) -> set[int]:
        root = f"/schemas/{namespace}"
        try:
            topics = self.zk.get_children(root)
        except NoNodeError:
            return set()
        found = set()
        for topic in topics:
            try:
                data, _ = self.zk.get(f"{root}/{topic}")
            except NoNodeError:
                continue
            locator = SchemaLocator()
            locator.ParseFromString(data)
            found |= {entry.position.ledgerId for entry in locator.index}
            found.add(locator.info.position.ledgerId)
        return found

    def unreferenced_now(self) -> dict[int, dict[str, str]]:
        """The namespaces' ledgers the broker does not reference: listed first, references
        read after, so that a ledger made in between is not counted; one gone meanwhile (the
        broker trimming) is dropped by reading it again."""
        listed = self.ledgers()
        referenced = self.referenced()
        again = rig.bookkeeper_ledgers(self.zk)
        return {
            ledger: metadata
            for ledger, metadata in listed.items()
            if ledger not in referenced and ledger in again
        }

    def orphans(
        self, known: Iterable[int] = (), settle: float = 12.0, poll: float = 2.0
    ) -> dict[int, dict[str, str]]:
        """The unreferenced ledgers, but for those `known` already, that stay unreferenced
        over `settle` seconds: a ledger between its creation and its recording, or between
        the broker dropping it and deleting it, is so only for a moment; a leaked one for
        ever. Empty as soon as one reading finds none."""
        skip = set(known)
        left = {k: v for k, v in self.unreferenced_now().items() if k not in skip}
        deadline = time.monotonic() + settle
        while left and time.monotonic() < deadline:
            time.sleep(poll)
            now = self.unreferenced_now()
            left = {ledger: metadata for ledger, metadata in left.items() if ledger in now}
        return left


def describe(orphans: dict[int, dict[str, str]]) -> str:
    def named(meta: dict[str, str]) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(meta.items()) if k != "application")

    return "; ".join(f"ledger {ledger} ({named(meta)})" for ledger, meta in sorted(orphans.items()))
