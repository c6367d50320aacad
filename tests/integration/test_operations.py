"""Operating the sidecar on the embedded default: archive list and drain, metrics, health,
structured logs."""

from __future__ import annotations

import json
import subprocess

import httpx
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from consumers.archive import DrainFilter
from consumers.archive_listing import list_archive
from consumers.metrics import WorkerMetrics
from deletion.domain.outcome import Outcome
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory, Recorder
from harness.process import run_cli, start_sidecar, stop_sidecar, wait_until
from ledger_janitor.demo.embedded import EmbeddedBroker, free_port
from ledger_janitor.demo.seeding import TopicSeeder, pending
from ledger_janitor.sidecar.endpoint import OperationsEndpoint


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, columns=200)


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


def test_archive_list_and_drain_with_metrics(
    embedded: JanitorFactory, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    janitor, backend = embedded, embedded.backend
    endpoint = None
    try:
        seeder = TopicSeeder(backend.metadata, backend.factory)
        seeded = seeder.seed(TopicName(namespace, "orders"), ledgers=5)
        late, kept, freed = seeded.ledgers[0], seeded.ledgers[1], seeded.ledgers[2]
        sidecar = janitor.sidecar(
            max_reconsume_times_of_two_phase_deletion=1,
            reconsume_later_seconds_of_two_phase_deletion=0,
        )
        # `late`'s metadata commit comes only after it was archived; `kept` stays referenced.
        sidecar.phase_one.enqueue([pending(seeded.topic, late), pending(seeded.topic, kept)])
        sidecar.phase_one.enqueue_then_commit(
            [pending(seeded.topic, freed)], lambda: seeder.release(seeded, [freed])
        )
        sidecar.pool.send(namespace.deletion_topic, b"\x00garbage", {}).result(10)

        registry, recorder = CollectorRegistry(), Recorder()
        metrics = WorkerMetrics(registry)
        worker = sidecar.worker(observers=[recorder], refresh_interval_seconds=0.2, metrics=metrics)
        worker.start()
        endpoint = OperationsEndpoint(
            registry, worker.live, worker.connected, "127.0.0.1", free_port()
        ).start()
        recorder.wait_for(
            lambda rs: sum(r.outcome in (Outcome.ARCHIVED, Outcome.DELETED) for r in rs) == 4
        )

        listed = cli(
            "archive",
            "list",
            "--namespace",
            str(namespace),
            "--json",
            "--metadata-store",
            backend.metadata_url,
            "--broker-url",
            broker.service_url,
        )
        assert listed.returncode == 0, listed.stderr
        rows = {row["ledger_id"]: row for row in json.loads(listed.stdout)}
        assert set(rows) == {late, kept, None}
        assert rows[late]["reason"].startswith("gave up after 1 reconsume: ledger")
        assert rows[late]["attempts"] == 2 and rows[late]["first_try_ms"] is not None
        assert rows[None]["reason"].startswith("undecodable message")

        dry = cli(
            "archive",
            "drain",
            "--namespace",
            str(namespace),
            "--dry-run",
            "--json",
            "--metadata-store",
            backend.metadata_url,
            "--broker-url",
            broker.service_url,
        )
        assert dry.returncode == 0, dry.stderr
        assert json.loads(dry.stdout)["counts"] == {"would_rearchive": 3}
        assert backend.exists(late)

        seeder.release(seeded, [late])  # the commit finally lands: `late` is now safe
        drained = sidecar.archive_drain(metrics=metrics).drain(namespace, DrainFilter(), False)
        outcomes = {a.info.ledger_id if a.info else None: o for a, o, _ in drained}
        assert outcomes == {
            late: Outcome.DELETED,
            kept: Outcome.REARCHIVED,
            None: Outcome.REARCHIVED,
        }
        assert not backend.exists(late) and backend.exists(kept)
        again = {
            a.info.ledger_id if a.info else None: a for a in list_archive(sidecar.client, namespace)
        }
        assert set(again) == {kept, None} and again[kept].drains == 1
        assert "still referenced" in again[kept].reason

        samples = scrape(endpoint.port)
        ns = str(namespace)
        assert total(samples, "ledger_janitor_messages_received_total", namespace=ns) >= 5
        assert total(samples, "ledger_janitor_messages_handled_total", outcome="archived") == 3
        assert total(samples, "ledger_janitor_messages_handled_total", outcome="reconsumed") == 2
        assert (
            total(
                samples,
                "ledger_janitor_ledgers_deleted_total",
                namespace=ns,
                component="MANAGED_LEDGER",
                ledger_type="LEDGER",
            )
            == 1
        )
        assert total(samples, "ledger_janitor_deletion_seconds_count") == 1
        assert total(samples, "ledger_janitor_archive_drained_total", outcome="deleted") == 1
        assert total(samples, "ledger_janitor_archive_drained_total", outcome="rearchived") == 2
        assert total(samples, "ledger_janitor_early_deliveries_held_total") >= 1
        assert total(samples, "ledger_janitor_in_use_cache_fetches_total") >= 1
        # Whether a look-up hits depends on timing (a batch shares one read per topic):
        # that hits are counted is unit-tested; here, that they are exported.
        assert ("ledger_janitor_in_use_cache_hits_total", ()) in samples
        assert httpx.get(f"http://127.0.0.1:{endpoint.port}/health").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{endpoint.port}/ready").status_code == 200
        worker.stop()
        assert httpx.get(f"http://127.0.0.1:{endpoint.port}/health").status_code == 503
    finally:
        if endpoint is not None:
            endpoint.stop()


def test_run_logs_json_lines_bound_to_each_message_and_serves_health(
    embedded: JanitorFactory, broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    janitor, backend = embedded, embedded.backend
    seeder = TopicSeeder(backend.metadata, backend.factory)
    seeded = seeder.seed(TopicName(namespace, "logged"), ledgers=3)
    target = seeded.ledgers[0]
    janitor.sidecar().phase_one.enqueue_then_commit(
        [pending(seeded.topic, target)], lambda: seeder.release(seeded, [target])
    )
    port = free_port()
    run = start_sidecar(
        backend.metadata_url,
        broker.service_url,
        metricsPort=port,
        sendDelaySecondsOfTwoPhaseDeletion=0,
        authParams="token:s3cret",
    )
    try:
        wait_until(lambda: not backend.exists(target), 60, "the deletion")
        wait_until(lambda: _status(port, "/ready") == 200, 30, "readiness")
        assert _status(port, "/health") == 200
    finally:
        stderr = stop_sidecar(run)
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    deleted = [line for line in lines if line["event"] == "deleted"]
    assert len(deleted) == 1
    assert deleted[0]["ledger_id"] == target
    assert deleted[0]["topic"] == str(seeded.topic)
    assert deleted[0]["namespace"] == str(namespace)
    assert deleted[0]["message_id"].count(":") >= 2
    assert "s3cret" not in stderr


def _status(port: int, path: str) -> int:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=2).status_code
    except httpx.TransportError:
        return 0
