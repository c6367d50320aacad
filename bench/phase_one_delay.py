"""How long a normal phase-one deletion waits, and how many reconsumes it costs, now that
every ledger must be `minLedgerAgeSecondsOfTwoPhaseDeletion` old when the in-use snapshot is
read and a too-young one is reconsumed once for as long as it still needs (issue 24),
against the rule before it: a ledger at or below its topic's newest went at its first due
time, any other waited for the age rule in steps of the reconsume delay (restated here as
`previous_rule`, with the defaults of then: 1 h and 600 s).

    python -m bench.phase_one_delay [--json]   (--quick: the same; it takes seconds)

The real DeletionHandler, Reconsumer, TTL cache, metadata reader and SQLite stores run on a
fake clock (hours pass in milliseconds); the broker is a queue that delivers each message at
the due time the worker's own gate computes (publish time + its delay + the skew allowance),
as a broker with delayed delivery does. Each case is one ledger, created `age` before its
phase one: a data ledger trimmed after a roll-over, a cursor ledger after a switch, a ledger
of a deleted topic, and a dropped schema version. Pulsar rolls a data ledger over no sooner
than `managedLedgerMinLedgerRolloverTimeMinutes` (10) after creating it, so a trimmed data
ledger is at least 10 min old in a default broker; a cursor switches ledgers on a topic's
reload, so a rotated cursor ledger may be seconds old.
"""

from __future__ import annotations

import heapq
import itertools
import tempfile
import uuid
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from unittest import mock

from bench._common import console_for, finish, parser, quiet, render
from consumers.handler import DeletionHandler
from consumers.reconsume import Reconsumer, RetryPolicy
from core.clock import EpochSeconds, MonotonicSeconds
from core.retry import TransientRetry
from deletion.adapters.ledgers.sqlite import SqliteLedgerStorage
from deletion.adapters.pulsar_metadata import ManagedLedgerWriter, MetadataInUseLedgers
from deletion.adapters.stores.sqlite import SqliteMetadataStore
from deletion.domain import message
from deletion.domain import message_properties as props
from deletion.domain.decision import (
    Decision,
    SafetyMargins,
    Verdict,
    decide_age,
    pulsar_custom_metadata,
)
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import LedgerComponent, PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome
from deletion.domain.ports import LedgerRecord, TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName

START = 1_800_000_000.0
SEND_DELAY, SKEW, MAX_RECONSUMES = 60, 10, 10
AGES = (0, 30, 60, 300, 600, 3600, 14_400)  # seconds between creating and enqueueing
KINDS = ("data ledger trimmed", "cursor ledger rotated", "topic deleted", "schema dropped")
# name -> (the previous rule?, minLedgerAge, reconsumeLater)
BEFORE, NOW = "before (1 h, 600 s)", "now (600 s, 600 s)"
RULES = {
    BEFORE: (True, 3600, 600),
    "now, with those defaults": (False, 3600, 600),
    NOW: (False, 600, 600),
}


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> EpochSeconds:
        return EpochSeconds(self.now)


@dataclass(order=True)
class Queued:
    due: float
    n: int
    payload: bytes
    props: dict[str, str]
    published_ms: int

    def data(self) -> bytes:
        return self.payload

    def properties(self) -> dict[str, str]:
        return dict(self.props)

    def publish_timestamp(self) -> int:
        return self.published_ms

    def topic_name(self) -> str:
        return f"{NS.deletion_topic}-partition-0"

    def message_id(self) -> Any:
        return _Id(self.n)

    def partition_key(self) -> str:
        return ""


@dataclass
class _Id:
    n: int

    def ledger_id(self) -> int:
        return self.n

    def entry_id(self) -> int:
        return 0

    def partition(self) -> int:
        return 0

    def batch_index(self) -> int:
        return -1


class Broker:
    """Delayed delivery: each message at publish time + its delay (`deliver_after`)."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.queue, self.numbers = clock, list[Queued](), itertools.count()

    def send(
        self,
        topic: str,
        payload: bytes,
        properties: Any,
        key: Any = None,
        delay_seconds: float = 0.0,
        ordering_key: str | None = None,
    ) -> Future[Any]:
        if not topic.endswith("_archive"):
            published = int(self.clock.now * 1000)
            queued = Queued(self.clock.now + delay_seconds, next(self.numbers), payload,
                            dict(properties), published)  # fmt: skip
            heapq.heappush(self.queue, queued)
        done: Future[Any] = Future()
        done.set_result("id")
        return done

    def acknowledge(self, received: Any) -> None:
        pass

    def negative_acknowledge(self, received: Any) -> None:
        raise AssertionError("nothing is handed back here")


class AgedLedgers(SqliteLedgerStorage):
    """The SQLite ledger store, with creation times on the fake clock."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.created_ms: dict[int, int] = {}

    def create_at(self, custom_metadata: Mapping[str, bytes], at: float) -> int:
        ledger_id = self.create_ledger(custom_metadata)
        self.created_ms[ledger_id] = int(at * 1000)
        return ledger_id

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        found = super().ledger(ledger_id)
        return found and replace(found, ctime_ms=self.created_ms[ledger_id])


NS = NamespaceName("bench", "delay")


def previous_rule(
    info: PendingDeleteLedgerInfo,
    record: LedgerRecord | None,
    snapshot: TopicLedgers,
    margins: SafetyMargins,
) -> Decision:
    """The rule before issue 24: an id at or below the snapshot's largest went on the
    snapshot alone; any other waited for the age rule, reconsumed on the fixed delay."""
    largest = snapshot.largest
    if record is None or (snapshot.exists and largest is not None and info.ledger_id <= largest):
        return Decision(Verdict.SAFE_TO_DELETE, "vouched for by the topic's newest ledger")
    aged = decide_age(info.ledger_id, record.ctime_ms, snapshot.fetched_at, margins)
    return aged._replace(old_at=None)


def one_case(kind: str, age: float, rule: tuple[bool, int, int], root: Path) -> tuple[float, int]:
    """(seconds from the phase-one send to the deletion, reconsumes) for one ledger."""
    previous, min_age, reconsume = rule
    if previous:
        with mock.patch("deletion.domain.deleter.decide_recordable", previous_rule):
            return one_case(kind, age, (False, min_age, reconsume), root)
    clock, db = Clock(), str(root / f"{kind}-{age}-{min_age}-{uuid.uuid4().hex}.db")
    store, ledgers = SqliteMetadataStore(db), AgedLedgers(db)
    try:
        topic = TopicName(NS, "t")
        writer = ManagedLedgerWriter(store)
        writer.lay_out()  # a cluster's store, holding the namespace
        writer.ensure_namespace(NS)
        created = clock.now - age
        component = {
            "cursor": LedgerComponent.MANAGED_CURSOR,
            "schema": LedgerComponent.SCHEMA_STORAGE,
        }
        which = next(
            (c for k, c in component.items() if kind.startswith(k)), LedgerComponent.MANAGED_LEDGER
        )
        target = ledgers.create_at(pulsar_custom_metadata(topic, which), created)
        newer = ledgers.create_at(
            pulsar_custom_metadata(topic, LedgerComponent.MANAGED_LEDGER), clock.now
        )
        cursor = ledgers.create_at(
            pulsar_custom_metadata(topic, LedgerComponent.MANAGED_CURSOR), clock.now
        )
        schema = ledgers.create_at(
            pulsar_custom_metadata(topic, LedgerComponent.SCHEMA_STORAGE), clock.now
        )
        # After the commit: the target is referenced no more; its creator recorded newer ones.
        if kind != "topic deleted":
            writer.write(topic, [newer], version=None)
            writer.write_cursor(topic, "sub", cursor)
            writer.write_schema(topic, [schema])
        broker = Broker(clock)
        margins = SafetyMargins(send_delay=SEND_DELAY, clock_skew=SKEW, min_ledger_age=min_age)
        cache = InUseLedgersCache(
            MetadataInUseLedgers(store, clock), 600, lambda: MonotonicSeconds(clock.now)
        )
        reconsumer = Reconsumer(broker, RetryPolicy(reconsume, MAX_RECONSUMES), clock)  # type: ignore[arg-type]
        handler = DeletionHandler(
            cache, ledgers, reconsumer, margins, TransientRetry(attempts=1), clock
        )
        info = PendingDeleteLedgerInfo(topic, which, message.LedgerType.LEDGER, target)
        sent = clock.now
        broker.send(NS.deletion_topic, message.encode(info), {}, delay_seconds=SEND_DELAY)
        while broker.queue:
            received = heapq.heappop(broker.queue)
            arrival = handler.arrival(broker, received)
            clock.now = max(clock.now, received.due, arrival.due)  # the gate holds it till due
            result = handler.handle(arrival)
            if result.outcome in (Outcome.DELETED, Outcome.ALREADY_GONE):
                return clock.now - sent, props.reconsume_times(received.props)
            if result.outcome is not Outcome.RECONSUMED:
                raise AssertionError(f"{kind}, age {age}: {result.outcome.value}: {result.reason}")
        raise AssertionError("nothing left to deliver")
    finally:
        store.close()
        ledgers.close()


def measure() -> dict[str, Any]:
    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-delay-") as tmp:
        for rule, settings in RULES.items():
            for kind in KINDS:
                for age in AGES:
                    waited, reconsumes = one_case(kind, age, settings, Path(tmp))
                    case = {"rule": rule, "kind": kind, "age_seconds": age}
                    case.update(waited_seconds=round(waited, 3), reconsumes=reconsumes)
                    cases.append(case)
    summary = {
        rule: {
            "max_waited_seconds": max(c["waited_seconds"] for c in cases if c["rule"] == rule),
            "max_reconsumes": max(c["reconsumes"] for c in cases if c["rule"] == rule),
        }
        for rule in RULES
    }
    before, now = summary[BEFORE], summary[NOW]
    return {
        "bench": "phase_one_delay",
        "send_delay_seconds": SEND_DELAY,
        "clock_skew_seconds": SKEW,
        "max_reconsume_times": MAX_RECONSUMES,
        "before_max_waited_seconds": before["max_waited_seconds"],
        "before_max_reconsumes": before["max_reconsumes"],
        "now_max_waited_seconds": now["max_waited_seconds"],
        "now_max_reconsumes": now["max_reconsumes"],
        "cases": cases,
        "summary": summary,
    }


def main() -> None:
    args = parser("phase_one_delay", __doc__).parse_args()
    console = console_for(args.json)
    quiet()
    result = measure()
    by_rule: dict[tuple[str, float], list[str]] = {}
    for case in result["cases"]:
        cell = f"{case['waited_seconds']:,.0f} s / {case['reconsumes']}"
        by_rule.setdefault((case["kind"], case["age_seconds"]), []).append(cell)
    rows = [[kind, f"{age:,.0f} s", *cells] for (kind, age), cells in by_rule.items()]
    render(
        f"send to deletion / reconsumes (send delay {SEND_DELAY} s, skew {SKEW} s, "
        f"at most {MAX_RECONSUMES} reconsumes)",
        ["ledger", "age at phase one", *RULES],
        rows,
        console,
    )
    for rule, figures in result["summary"].items():
        console.print(f"{rule}: longest wait {figures['max_waited_seconds']:,.0f} s, "
                      f"most reconsumes {figures['max_reconsumes']}")  # fmt: skip
    finish(result, args.json)


if __name__ == "__main__":
    main()
