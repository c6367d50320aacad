"""A scenario whose truth the test itself knows, and the safety checks against it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial

from deletion.domain.message import LedgerComponent
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import Backend
from ledger_janitor.sidecar.wiring import Sidecar
from tests.reliability.oracle import GroundTruth, pending
from tests.reliability.raw_ledgers import RawLedgers, raw_ledgers

# Names that need care: a zero-padded suffix is no partition (its schema is its own, at
# /schemas/<t>/<ns>/t-partition-01); a partition shares its base topic's schema; and a local
# name with characters that Pulsar's znode names carry URL-encoded.
LOCAL_NAMES = [
    "t-partition-01",
    "a b%c+d~e*f \u00e9\u4e16-partition-3",
    "orders-partition-3",
    "plain",
]
CURSORS = ("sub", "reader", "backup")
SCHEMA_VERSIONS = 2


def raw_for(backend: Backend) -> RawLedgers:
    return raw_ledgers(backend.metadata_url, getattr(backend.metadata, "client", None))


@dataclass
class Scenario:
    """Topics in Pulsar's layout and pending deletions of two kinds:

    - `released`: enqueued, then the metadata commit dropped them: must end deleted;
    - `unreleased`: enqueued, but the caller "crashed" before its commit: still referenced
      (managed-ledger, cursor and schema ledgers), so they must survive and end archived;
    - everything else the test created is never enqueued and must survive.
    """

    backend: Backend
    truth: GroundTruth
    raw: RawLedgers
    topics: list[TopicName] = field(default_factory=list)
    released: set[int] = field(default_factory=set)
    unreleased: set[int] = field(default_factory=set)

    @property
    def namespaces(self) -> list[NamespaceName]:
        return sorted({topic.namespace for topic in self.topics})

    def assert_safe(self) -> None:
        """Nothing the test's metadata references is gone, nor anything never released."""
        alive = self.raw.alive()
        referenced = self.truth.referenced()
        assert self.unreleased <= referenced
        missing = sorted(referenced - alive)
        assert missing == [], f"referenced ledgers deleted: {missing}"
        deleted = set(self.truth.owner) - alive
        assert deleted <= self.released, (
            f"deleted, never released: {sorted(deleted - self.released)}"
        )

    def gone(self) -> set[int]:
        """The released ledgers no longer in the ledger store."""
        return self.released - self.raw.alive()

    def assert_exactly_once(self) -> None:
        """Where the ledger store logs each real deletion: each released ledger was deleted
        exactly once, and nothing else was."""
        deletions = self.raw.deletions()
        assert deletions is not None, "this ledger store keeps no deletion log"
        counts = Counter(deletions)
        assert set(counts) == self.released
        assert [ledger for ledger, n in counts.items() if n > 1] == []


def build_scenario(
    backend: Backend,
    sidecar: Sidecar,
    namespaces: Iterable[NamespaceName],
    topics_per_namespace: int,
    released_per_topic: int,
    unreleased_per_topic: int = 0,
    kept_per_topic: int = 2,
    deleted_topics: bool = False,
) -> Scenario:
    """With `unreleased_per_topic`, one cursor ledger and one schema ledger of each topic are
    enqueued without their commit too. With `deleted_topics` (the worker then needs
    minLedgerAgeSecondsOfTwoPhaseDeletion=0), each namespace also has a topic deleted after
    phase one for all its ledgers, and each topic an orphan, never recorded (a crash between
    creating and recording it), enqueued as `audit --enqueue` would, and then a newer ledger
    the managed ledger records (its next roll-over, which is what vouches for the orphan):
    all of them must end deleted."""
    truth = GroundTruth(backend.metadata, backend.factory)
    scenario = Scenario(backend, truth, raw_for(backend))
    for i, namespace in enumerate(namespaces):
        for n in range(topics_per_namespace):
            local = LOCAL_NAMES[(i + n) % len(LOCAL_NAMES)]
            if n >= len(LOCAL_NAMES):
                local = f"x{n} {local}"
            topic = TopicName(namespace, local)
            count = released_per_topic + unreleased_per_topic + kept_per_topic
            seeded = truth.seed(topic, count, CURSORS, SCHEMA_VERSIONS)
            scenario.topics.append(topic)
            released = seeded.ledgers[:released_per_topic]
            unreleased = seeded.ledgers[released_per_topic : count - kept_per_topic]
            sidecar.phase_one.enqueue_then_commit(
                [pending(topic, i) for i in released],
                partial(truth.release, topic, released),
            )
            crashed = [pending(topic, i) for i in unreleased]
            if unreleased:
                cursor, schema = seeded.cursors["reader"], seeded.schemas[0]
                crashed.append(pending(topic, cursor, LedgerComponent.MANAGED_CURSOR))
                crashed.append(pending(topic, schema, LedgerComponent.SCHEMA_STORAGE))
            sidecar.phase_one.enqueue(crashed)
            scenario.released |= set(released)
            scenario.unreleased |= {info.ledger_id for info in crashed}
            if deleted_topics:
                orphan = truth.new_ledger(topic, LedgerComponent.MANAGED_LEDGER)
                sidecar.phase_one.enqueue([pending(topic, orphan)])
                truth.roll_over(topic)
                scenario.released.add(orphan)
        if deleted_topics:
            _delete_a_topic(
                scenario, sidecar, TopicName(namespace, f"gone {i} \u00e9-partition-{i}")
            )
    return scenario


def _delete_a_topic(scenario: Scenario, sidecar: Sidecar, topic: TopicName) -> None:
    seeded = scenario.truth.seed(topic, 3, CURSORS, SCHEMA_VERSIONS)
    infos = [
        *(pending(topic, i) for i in seeded.ledgers),
        *(pending(topic, i, LedgerComponent.MANAGED_CURSOR) for i in seeded.cursors.values()),
        *(pending(topic, i, LedgerComponent.SCHEMA_STORAGE) for i in seeded.schemas),
    ]
    sidecar.phase_one.enqueue_then_commit(infos, lambda: scenario.truth.delete_topic(topic))
    scenario.topics.append(topic)
    scenario.released |= {info.ledger_id for info in infos}
