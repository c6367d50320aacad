"""Builds the sidecar's parts from one ServiceConfiguration: adapters chosen by URL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pulsar

from config import ServiceConfiguration, StoreUrl, parse_store_url
from consumers.handler import DeletionHandler, HandlingResult
from consumers.reconsume import Reconsumer, RetryPolicy
from consumers.worker import DeletionWorker, WorkerSettings
from deletion.in_use import InUseLedgersCache
from deletion.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.ledgers.sqlite import SqliteLedgerStorage
from deletion.namespaces import NamespaceRegistry, discover_deletion_namespaces
from deletion.ports import LedgerStorage, MetadataStore
from deletion.pulsar_metadata import MetadataInUseLedgers
from deletion.stores.sqlite import SqliteMetadataStore
from deletion.stores.zookeeper import ZooKeeperMetadataStore
from deletion.topics import NamespaceName
from producers import PhaseOne, ProducerPool

from . import broker


def open_metadata_store(url: StoreUrl, timeout: float) -> MetadataStore:
    if url.scheme == "zk":
        return ZooKeeperMetadataStore.connect(url, timeout)
    Path(url.path).parent.mkdir(parents=True, exist_ok=True)
    return SqliteMetadataStore(url.path)


def open_ledger_storage(url: StoreUrl, timeout: float) -> LedgerStorage:
    if url.scheme == "zk":
        return BookKeeperLedgerStorage(ZooKeeperMetadataStore.connect(url, timeout))
    Path(url.path).parent.mkdir(parents=True, exist_ok=True)
    return SqliteLedgerStorage(url.path)


@dataclass
class Sidecar:
    """Everything `run` and `enqueue` need, closed in reverse order of opening."""

    config: ServiceConfiguration
    metadata: MetadataStore
    ledgers: LedgerStorage
    client: pulsar.Client
    pool: ProducerPool
    registry: NamespaceRegistry
    phase_one: PhaseOne
    closer: ExitStack = field(default_factory=ExitStack)

    def namespaces(self) -> Iterable[NamespaceName]:
        configured = [NamespaceName.parse(text) for text in self.config.deletion_namespaces]
        discovered = discover_deletion_namespaces(self.metadata)
        return {*configured, *self.registry.namespaces(), *discovered}

    def worker(
        self,
        clock: Callable[[], float] = time.time,
        on_result: Callable[[HandlingResult], None] | None = None,
        refresh_interval_seconds: float = 10.0,
    ) -> DeletionWorker:
        config = self.config
        cache = InUseLedgersCache(
            MetadataInUseLedgers(self.metadata, clock),
            config.in_use_ledgers_cache_ttl_seconds,
            clock,
        )
        policy = RetryPolicy(
            delay_seconds=config.reconsume_later_seconds_of_two_phase_deletion,
            max_reconsume_times=config.max_reconsume_times_of_two_phase_deletion,
            send_timeout_seconds=config.operation_timeout_seconds,
        )
        handler = DeletionHandler(
            cache,
            self.ledgers,
            Reconsumer(self.pool, policy, clock),
            send_delay_seconds=config.send_delay_seconds_of_two_phase_deletion,
            clock=clock,
        )
        settings = WorkerSettings(
            parallelism=config.ledger_deletion_parallelism_of_two_phase_deletion,
            send_delay_seconds=config.send_delay_seconds_of_two_phase_deletion,
            max_held_early=config.max_held_early_messages,
            refresh_interval_seconds=refresh_interval_seconds,
        )
        return DeletionWorker(self.client, handler, self.namespaces, settings, clock, on_result)

    def close(self) -> None:
        self.closer.close()


def open_sidecar(config: ServiceConfiguration, client_log: Path | None = None) -> Sidecar:
    with ExitStack() as stack:
        timeout = float(config.operation_timeout_seconds)
        metadata = open_metadata_store(parse_store_url(config.metadata_store_url), timeout)
        stack.callback(metadata.close)
        ledger_url = config.bookkeeper_metadata_service_uri or config.metadata_store_url
        ledgers = open_ledger_storage(parse_store_url(ledger_url), timeout)
        stack.callback(ledgers.close)
        client = broker.connect(config, client_log)
        stack.callback(client.close)
        pool = ProducerPool(client, send_timeout_ms=config.operation_timeout_seconds * 1000)
        stack.callback(pool.close)
        registry = NamespaceRegistry(metadata)
        phase_one = PhaseOne(
            pool, registry, config.send_delay_seconds_of_two_phase_deletion, timeout
        )
        return Sidecar(
            config, metadata, ledgers, client, pool, registry, phase_one, stack.pop_all()
        )
    raise AssertionError("unreachable")
