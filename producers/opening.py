"""Phase one opened from configuration: a client, the topics' set-up, producers, the registry.

Used by the sidecar and by anything else that only enqueues (the audit's --enqueue), so
neither has to open what the other needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pulsar
import structlog

from config import ServiceConfiguration
from deletion.adapters.opening import StoreSpec, open_metadata_store
from deletion.domain import message
from deletion.domain.namespaces import NamespaceRegistry
from deletion.domain.ports import MetadataStore
from producers.admin_rest import AdminRest
from producers.phase_one import PhaseOne
from producers.topic_setup import AdminTopicSetup, ClientTopicSetup, PreparedNamespaces
from transport import client as broker
from transport.admin_http import AdminHttp
from transport.producer_pool import ProducerPool
from transport.schema import declare, register_declared

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class PhaseOneParts:
    """Phase one, and the connections it sends through (open while the context lasts)."""

    phase_one: PhaseOne
    client: pulsar.Client
    pool: ProducerPool
    registry: NamespaceRegistry
    admin: AdminRest | None


def open_admin(config: ServiceConfiguration) -> AdminRest | None:
    """The broker's admin REST API, if webServiceUrl names one."""
    http = AdminHttp.from_config(config)
    return AdminRest(http) if http is not None else None


def close_client(client: pulsar.Client, seconds: float) -> None:
    """Close the client; a broker that does not answer the close is said, not raised.

    What was sent is settled by then (each send acknowledged or not), and a command must
    still report it. Against a broker that stopped answering, a producer's close times out,
    and the client's close then answers AlreadyClosed (`close()` raised it: `enqueue` said
    `error: AlreadyClosed` instead of which ledgers it had enqueued)."""
    failed = broker.close_within(client, seconds)
    if failed is not None:
        log.warning("closing the broker client failed", error=failed)


@contextmanager
def open_phase_one(
    config: ServiceConfiguration,
    metadata: MetadataStore | None = None,
    client_log: Path | None = None,
) -> Iterator[PhaseOneParts]:
    """Phase one on `metadata` (opened from the configuration, and closed, if not given);
    everything opened here is closed in reverse order on leaving."""
    with ExitStack() as stack:
        if metadata is None:
            metadata = open_metadata_store(StoreSpec.metadata(config))
            stack.callback(metadata.close)
        client = broker.connect(config, client_log)
        wait = config.operation_timeout_seconds + broker.CLOSE_MARGIN_SECONDS
        stack.callback(close_client, client, wait)
        admin = open_admin(config)
        if admin is not None:
            stack.callback(admin.close)
        if config.ledger_deletion_schema_enabled_of_two_phase_deletion:
            schema = message.SCHEMA_DEFINITION
            declare(client, schema, admin.schema_registrar(schema) if admin is not None else None)
        setup = (
            AdminTopicSetup(
                admin,
                config.ledger_deletion_parallelism_of_two_phase_deletion,
                partial(register_declared, client),
            )
            if admin is not None
            else ClientTopicSetup(client)
        )
        prepared = PreparedNamespaces(setup)
        pool = ProducerPool(
            client,
            send_timeout_ms=config.operation_timeout_seconds * 1000,
            prepare=prepared.ensure_topic,
        )
        stack.callback(pool.close)
        registry = NamespaceRegistry(metadata)
        phase_one = PhaseOne(
            pool,
            registry,
            config.send_delay_seconds_of_two_phase_deletion,
            float(config.operation_timeout_seconds),
            prepared.ensure_archive,
        )
        yield PhaseOneParts(phase_one, client, pool, registry, admin)
