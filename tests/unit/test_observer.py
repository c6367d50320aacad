"""The worker's observers: several as one, its own stats, and the Prometheus metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from consumers.log_summary import NAMED, LogSummary
from consumers.metrics import WorkerMetrics
from consumers.observer import Observer, Observers, WorkerStats
from core.clock import EpochSeconds, MonotonicSeconds
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.message import LedgerComponent, LedgerType, PendingDeleteLedgerInfo
from deletion.domain.outcome import Outcome, Result
from deletion.domain.ports import TopicLedgers
from deletion.domain.topics import NamespaceName, TopicName

NS = NamespaceName("tenant", "ns")
ELSEWHERE = NamespaceName("tenant", "elsewhere")
TOPIC = TopicName(NS, "orders")
INFO = PendingDeleteLedgerInfo(TOPIC, LedgerComponent.MANAGED_CURSOR, LedgerType.LEDGER, 7)


class Named(Observer):
    def __init__(self, name: str, calls: list[tuple[str, object]]) -> None:
        self.name, self.calls = name, calls

    def on_received(self, namespace: NamespaceName, count: int = 1) -> None:
        self.calls.extend([(self.name, namespace)] * count)

    def on_handled(self, namespace: NamespaceName, result: Result, seconds: float) -> None:
        self.calls.append((self.name, result.outcome))


def test_observers_notify_each_in_order_and_default_hooks_do_nothing() -> None:
    calls: list[tuple[str, object]] = []
    both = Observers([Named("a", calls), Named("b", calls)])
    both.on_received(NS)
    both.on_handled(NS, Result(Outcome.DELETED, "deleted ledger 7"), 0.1)
    both.on_drained(NS, Outcome.REQUEUED)
    both.on_handed_back(NS, archived=False)
    assert calls == [("a", NS), ("b", NS), ("a", Outcome.DELETED), ("b", Outcome.DELETED)]


def test_a_batch_is_told_once_to_each_and_as_its_messages_to_the_per_message_hook() -> None:
    calls: list[tuple[str, object]] = []
    stats, summary = WorkerStats(), LogSummary()
    handled = [(NS, _deleted(4)), (ELSEWHERE, Result(Outcome.ALREADY_GONE, "", INFO))]
    Observers([Named("a", calls), stats, summary]).on_handled_batch(handled, 0.1)
    assert calls == [("a", Outcome.DELETED), ("a", Outcome.ALREADY_GONE)]
    assert stats.summary() == {
        "received": 0, "held_early": 0, "handed_back": 0, "deleted": 1, "already_gone": 1
    }  # fmt: skip
    taken = summary.take()
    assert taken is not None and taken["deleted_ledgers"] == [4]
    assert taken["namespaces"] == ["tenant/elsewhere", "tenant/ns"]


def test_stats_count_what_the_worker_did() -> None:
    stats = WorkerStats()
    stats.on_received(NS)
    stats.on_received(NS, 2)  # a received batch is told once
    stats.on_held_early(NS)
    stats.on_handled(NS, Result(Outcome.DELETED, "", INFO), 0.1)
    stats.on_handled(NS, Result(Outcome.RECONSUMED, "", INFO), 0.1)
    stats.on_handed_back(NS, archived=True)  # redelivered too often: archived instead
    stats.on_handed_back(NS, archived=False)
    assert stats.summary() == {
        "received": 3,
        "held_early": 1,
        "handed_back": 2,
        "deleted": 1,
        "reconsumed": 1,
        "archived": 1,
    }


def test_metrics_label_namespaces_up_to_a_bound_then_other() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry, max_namespaces=1)
    for namespace in (NS, ELSEWHERE, NS):
        metrics.on_received(namespace)
    metrics.on_received(NS, 3)  # a received batch of three
    metrics.on_held_early(ELSEWHERE)
    metrics.on_handed_back(NS, archived=True)
    received = "ledger_janitor_messages_received_total"
    assert registry.get_sample_value(received, {"namespace": str(NS)}) == 5
    assert registry.get_sample_value(received, {"namespace": "other"}) == 1
    held = "ledger_janitor_early_deliveries_held_total"
    assert registry.get_sample_value(held, {"namespace": "other"}) == 1
    handed_back = "ledger_janitor_messages_handed_back_total"
    assert registry.get_sample_value(handed_back, {"namespace": str(NS)}) == 1


def test_metrics_count_outcomes_and_only_deleted_ledgers_as_deletions() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    metrics.on_handled(NS, Result(Outcome.DELETED, "", INFO), 0.5)
    metrics.on_handled(NS, Result(Outcome.ALREADY_GONE, "", INFO), 0.5)
    metrics.on_drained(NS, Outcome.WOULD_REARCHIVE)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(f"ledger_janitor_{name}", labels)

    ns = str(NS)
    assert value("messages_handled_total", namespace=ns, outcome="deleted") == 1
    assert value("messages_handled_total", namespace=ns, outcome="already_gone") == 1
    kind = {"component": "MANAGED_CURSOR", "ledger_type": "LEDGER"}
    assert value("ledgers_deleted_total", namespace=ns, **kind) == 1
    assert value("deletion_seconds_count", **kind) == 1
    assert value("archive_drained_total", namespace=ns, outcome="would_rearchive") == 1


class Source:
    def fetch(self, topic: TopicName) -> TopicLedgers:
        return TopicLedgers(topic, True, frozenset({1}), EpochSeconds(0.0))


def test_metrics_read_the_counters_of_the_caches_they_are_given() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    cache = InUseLedgersCache(Source(), ttl=60, clock=lambda: MonotonicSeconds(0.0))
    metrics.watch_cache(cache)
    cache.lookup(TOPIC)
    cache.lookup(TOPIC)
    assert registry.get_sample_value("ledger_janitor_in_use_cache_fetches_total") == 1
    assert registry.get_sample_value("ledger_janitor_in_use_cache_hits_total") == 1
    assert registry.get_sample_value("ledger_janitor_in_use_cache_misses_total") == 1


def _deleted(ledger: int) -> Result:
    return Result(Outcome.DELETED, "", PendingDeleteLedgerInfo(
        TOPIC, LedgerComponent.MANAGED_LEDGER, LedgerType.LEDGER, ledger))  # fmt: skip


def test_the_summary_counts_a_period_naming_few_deletions_and_nothing_when_idle() -> None:
    now = [100.0]
    summary = LogSummary(clock=lambda: now[0])
    for ledger in (9, 3):
        summary.on_handled(NS, _deleted(ledger), 0.1)
    summary.on_handled(ELSEWHERE, Result(Outcome.ALREADY_GONE, "", INFO), 0.1)
    summary.on_handled(NS, Result(Outcome.RECONSUMED, "too young", INFO), 0.1)
    summary.on_handed_back(NS, archived=True)
    summary.on_handed_back(NS, archived=False)
    now[0] = 110.04
    # What `say` writes as its `worked` line (a real `run` writes it in
    # tests/integration/test_worked_summary.py); nothing when nothing was done since.
    assert summary.take() == {
        "seconds": 10.0, "deleted": 2, "already_gone": 1, "reconsumed": 1, "archived": 1,
        "handed_back": 1, "namespaces": ["tenant/elsewhere", "tenant/ns"],
        "deleted_ledgers": [3, 9],
    }  # fmt: skip
    now[0] = 120.0
    assert summary.take() is None  # and the period restarted


def test_the_summary_counts_many_deletions_without_naming_them() -> None:
    summary = LogSummary()
    for ledger in range(NAMED + 5):
        summary.on_handled(NS, _deleted(ledger), 0.1)
    taken = summary.take()
    assert taken is not None and taken["deleted"] == NAMED + 5
    assert "deleted_ledgers" not in taken
    summary.on_handled(NS, _deleted(1), 0.1)  # a new period names again
    assert (summary.take() or {})["deleted_ledgers"] == [1]
