"""`ledger-janitor run` on the real broker, piloted on two namespaces of which the broker
refuses one (it does not exist: a typo): the refusal is said in one warning, and the other
namespace is worked all the same. A refused namespace used to stop every namespace after it
in name order, and at start the whole sidecar ("could not start: TopicNotFound", forever)."""

from __future__ import annotations

from pathlib import Path

from deletion.domain.topics import NamespaceName, TopicName
from harness.process import wait_until
from ledger_janitor.demo.seeding import pending
from tests.integration.run_rig import running, settings
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar


def test_a_namespace_the_broker_refuses_does_not_keep_run_from_the_others(
    real_pulsar: RealPulsar, real_namespace: NamespaceName, client_log: Path
) -> None:
    typo = NamespaceName(real_namespace.tenant, "a-typo")  # sorts before the real one
    assert typo < real_namespace
    sidecar = rig.sidecar(real_pulsar, client_log, send_delay_seconds_of_two_phase_deletion=1)
    try:  # a pending deletion of a ledger that does not exist: worked at once when due
        sidecar.phase_one.enqueue([pending(TopicName(real_namespace, "orders"), 987_654_321)])
    finally:
        sidecar.close()
    args = [
        "--metadata-store", real_pulsar.metadata_url, "--broker-url", real_pulsar.service_url,
        *settings(webServiceUrl=real_pulsar.web_url, sendDelaySecondsOfTwoPhaseDeletion=1,
                  deletionNamespaces=f"{typo},{real_namespace}"),
    ]  # fmt: skip
    with running(*args) as run:
        received = "ledger_janitor_messages_received_total"
        ours = str(real_namespace)
        wait_until(lambda: (run.sample(received, namespace=ours) or 0) >= 1, 120, "a receipt")
        assert run.sample("ledger_janitor_watched_namespaces") == 1
        wait_until(lambda: run.status("/ready") == 200, 60, "readiness")
        run.terminate()
    refused = [e for e in run.events() if e["event"].startswith("cannot subscribe")]
    assert refused and {(e["topic"], e["level"]) for e in refused} == {
        (typo.deletion_topic, "warning")
    }  # said once, and again only if the broker's answer changes
    assert "TopicNotFound" in refused[0]["error"]
    (started,) = [e for e in run.events() if e["event"] == "worker running"]
    assert started["namespaces"] == [ours]
