"""Builds the sidecar's parts from one ServiceConfiguration: the adapters and phase one as
`deletion.adapters.opening` and `producers.opening` open them, phase two around them."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pulsar

from config import ServiceConfiguration
from consumers.archive import ArchiveDrain
from consumers.handler import DeletionHandler
from consumers.metrics import WorkerMetrics
from consumers.observer import Observer
from consumers.reconsume import Reconsumer, RetryPolicy
from consumers.worker import DeletionWorker, WorkerSettings
from core.clock import WallClock, wall_clock
from core.errors import JanitorError, LayoutError
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.adapters.layout import require_pulsar_layout
from deletion.adapters.ledgers.bookie_http import BookieHttpLedgerStorage
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.adapters.opening import (
    StoreSpec,
    open_in_use_source,
    open_ledger_storage,
    open_metadata_store,
    open_offload_storage,
)
from deletion.adapters.stores.zookeeper import ZooKeeperMetadataStore
from deletion.domain.decision import SafetyMargins
from deletion.domain.in_use import InUseLedgersCache
from deletion.domain.namespaces import NamespaceRegistry, discover_deletion_namespaces
from deletion.domain.ports import LedgerStorage, MetadataStore, Session, latest
from deletion.domain.topics import NamespaceName
from ledger_janitor import logs
from producers import PhaseOne, ProducerPool
from producers.admin_rest import AdminRest
from producers.namespace_policies import policy_risks
from producers.opening import open_phase_one


def safety_margins(config: ServiceConfiguration) -> SafetyMargins:
    return SafetyMargins(
        send_delay=config.send_delay_seconds_of_two_phase_deletion,
        clock_skew=config.clock_skew_allowance_seconds_of_two_phase_deletion,
        min_ledger_age=config.min_ledger_age_seconds_of_two_phase_deletion,
        settle=config.metadata_store_session_timeout_millis / 1000.0,
    )


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
    admin: AdminRest | None = None

    def policy_risks(self) -> dict[NamespaceName, list[str]]:
        """Per namespace, the policies under which a pending deletion could be lost; nothing
        without an admin URL to ask."""
        if self.admin is None:
            return {}
        risks = {ns: policy_risks(self.admin, ns) for ns in sorted(self.namespaces())}
        return {ns: found for ns, found in risks.items() if found}

    def configured_namespaces(self) -> list[NamespaceName]:
        """`deletionNamespaces`, parsed; empty when it is not set."""
        return sorted({NamespaceName.parse(text) for text in self.config.deletion_namespaces})

    def namespaces(self) -> list[NamespaceName]:
        """The namespaces this sidecar works: exactly `deletionNamespaces` when it is set (a
        pilot on some namespaces: no other is consumed, drained or checked); otherwise every
        namespace with a deletion topic, registered by phase one or found in Pulsar's
        managed-ledger tree."""
        configured = self.configured_namespaces()
        if configured:
            return configured
        discovered = discover_deletion_namespaces(self.metadata)
        return sorted({*self.registry.namespaces(), *discovered})

    def handler(
        self, clock: WallClock = wall_clock, cache_ttl_seconds: float | None = None
    ) -> DeletionHandler:
        """Phase two's checks and deletion; `cache_ttl_seconds=0` looks everything up afresh."""
        config = self.config
        shared = self.admin.http if self.admin is not None else None
        source = open_in_use_source(config, self.metadata, clock, shared)
        if isinstance(source, AdminApiInUseLedgers) and shared is None:
            self.closer.callback(source.close)
        ttl = (
            config.in_use_ledgers_cache_ttl_seconds
            if cache_ttl_seconds is None
            else cache_ttl_seconds
        )
        cache = InUseLedgersCache(source, ttl)
        policy = RetryPolicy(
            delay_seconds=config.reconsume_later_seconds_of_two_phase_deletion,
            max_reconsume_times=config.max_reconsume_times_of_two_phase_deletion,
            send_timeout_seconds=config.operation_timeout_seconds,
            # One bound on how often a pending deletion is retried before an operator sees
            # it: a "still in use" verdict retried via the retry topic, or a failure handed
            # back for redelivery (DeadLetterPolicy.maxRedeliverCount).
            max_redeliver_count=config.max_reconsume_times_of_two_phase_deletion,
        )
        return DeletionHandler(
            cache,
            self.ledgers,
            Reconsumer(self.pool, policy, clock),
            safety_margins(config),
            clock=clock,
            offload=open_offload_storage(config),
            session=self.session,
        )

    def session(self) -> Session:
        """The metadata store's and the ledger store's connections, as one."""
        return latest(self.metadata.session(), self.ledgers.session())

    def worker(
        self,
        clock: WallClock = wall_clock,
        observers: Iterable[Observer] = (),
        refresh_interval_seconds: float = 10.0,
        metrics: WorkerMetrics | None = None,
    ) -> DeletionWorker:
        config = self.config
        settings = WorkerSettings(
            parallelism=config.ledger_deletion_worker_threads_of_two_phase_deletion,
            batch_size=config.ledger_deletion_batch_size_of_two_phase_deletion,
            max_held_early=config.max_held_early_messages,
            refresh_interval_seconds=refresh_interval_seconds,
        )
        handler = self.handler(clock)
        if metrics is not None:  # the metrics read the cache the handler was built with
            metrics.watch_cache(handler.in_use)
            observers = [*observers, metrics]

        # Set up first, as phase one's first send would: see PhaseOne.prepared.
        def namespaces() -> Iterable[NamespaceName]:
            return self.phase_one.prepared(self.namespaces())

        return DeletionWorker(self.client, handler, namespaces, settings, clock, observers)

    def metadata_reachable(self) -> tuple[bool, str]:
        """Reachable, and still laid out as the cluster's (its roots, BookKeeper's LAYOUT):
        a store wiped or swapped under a running sidecar makes it not ready."""
        if isinstance(self.metadata, ZooKeeperMetadataStore) and not self.metadata.client.connected:
            # A request would wait for the reconnection; readiness must answer now.
            return False, f"metadata store unreachable: ZooKeeper {self.metadata.client.state}"
        try:
            require_pulsar_layout(self.metadata, StoreSpec.metadata(self.config).where)
            if isinstance(self.ledgers, BookKeeperLedgerStorage | BookieHttpLedgerStorage):
                self.ledgers.verify_layout()
        except LayoutError as exc:
            return False, str(exc)
        except JanitorError as exc:
            return False, f"metadata store unreachable: {exc}"
        return True, "metadata store reachable"

    def archive_drain(
        self, clock: WallClock = wall_clock, metrics: WorkerMetrics | None = None
    ) -> ArchiveDrain:
        """A drain that re-checks every archived message against fresh metadata."""
        handler = self.handler(clock, cache_ttl_seconds=0)
        return ArchiveDrain(self.client, handler, self.phase_one, self.pool, clock, metrics)

    def close(self) -> None:
        self.closer.close()


def open_sidecar(config: ServiceConfiguration, client_log: Path | None = None) -> Sidecar:
    """`client_log`: where the Pulsar C++ client logs; by default through our own log
    (`logs.client_log_path`), so that stdout holds nothing of it."""
    client_log = client_log or logs.client_log_path()
    with ExitStack() as stack:
        # Each store proves it is the cluster's (its layout) before anything is written to
        # either; the ledgers first: where they are, "already gone" is concluded.
        ledgers = open_ledger_storage(
            StoreSpec.ledgers(config), bookie_http=config.bookie_http_service_url
        )
        stack.callback(ledgers.close)
        metadata = open_metadata_store(StoreSpec.metadata(config))
        stack.callback(metadata.close)
        parts = stack.enter_context(open_phase_one(config, metadata, client_log))
        return Sidecar(
            config,
            metadata,
            ledgers,
            parts.client,
            parts.pool,
            parts.registry,
            parts.phase_one,
            stack.pop_all(),
            parts.admin,
        )
    raise AssertionError("unreachable")
