"""A broker with token authentication and authorization on (its own standalone, tokens made
by the distribution's `pulsar tokens`): the admin-API in-use source (`inUseLedgersSource=ADMIN`)
reads the real `internalStats` with the token; a wrong token is "unknown", never "not in use";
and who may produce to a namespace's `__ledger_deletion`, as the broker decides it, against
what the sidecar warns about at start-up."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest

from core.errors import MetadataError
from deletion.adapters.admin_api import AdminApiInUseLedgers
from deletion.domain.outcome import Outcome
from deletion.domain.topics import DELETION_TOPIC, NamespaceName, TopicName
from harness.pulsar_admin import BrokerAdmin
from harness.pulsar_dist import distribution
from harness.pulsar_standalone import PulsarStandalone
from harness.pulsar_tokens import make_tokens
from ledger_janitor.demo.seeding import pending
from tests.real_pulsar import rig
from tests.real_pulsar.conftest import RealPulsar
from transport.admin_http import AdminHttp

ROLES = ("admin", "app", "tenant-admin", "stranger")
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


@dataclass
class SecuredPulsar:
    cluster: RealPulsar
    tokens: dict[str, str]
    admin: BrokerAdmin

    def client(self, role: str, log: Path) -> pulsar.Client:
        return pulsar.Client(
            self.cluster.service_url,
            authentication=pulsar.AuthenticationToken(self.tokens[role]),
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log)),
            operation_timeout_seconds=15,
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredPulsar]:
    root = tmp_path_factory.mktemp("secured")
    key, tokens = make_tokens(distribution(), root / "keys", ROLES)
    settings = {
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        "authenticationProviders": "org.apache.pulsar.broker.authentication."
        "AuthenticationProviderToken",
        "tokenSecretKey": f"file://{key}",
        "superUserRoles": "admin",
        "brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
        "brokerClientAuthenticationParameters": f"token:{tokens['admin']}",
    }
    standalone = PulsarStandalone(root / "pulsar", settings, admin_token=tokens["admin"]).start()
    admin = BrokerAdmin(standalone.web_url, tokens["admin"])
    try:
        found = RealPulsar(
            standalone.service_url, standalone.web_url, standalone.zookeeper_hosts, standalone
        )
        yield SecuredPulsar(found, tokens, admin)
    finally:
        admin.close()
        standalone.stop()


def _namespace(secured: SecuredPulsar, name: str) -> NamespaceName:
    namespace = NamespaceName(name, "ns")
    clusters = secured.admin.get("/admin/v2/clusters")
    body = {"allowedClusters": clusters, "adminRoles": ["tenant-admin"]}
    secured.admin.put(f"/admin/v2/tenants/{name}", body, 409)
    secured.admin.put(f"/admin/v2/namespaces/{namespace}", None, 409)
    return namespace


def _written(secured: SecuredPulsar, topic: TopicName, log: Path) -> tuple[TopicName, set[int]]:
    """The topic with 15 messages (two ledgers) written by the superuser; the ledgers the
    broker says it references."""
    client = secured.client("admin", log)
    try:
        rig.produce(client, topic, 15)
    finally:
        client.close()
    return topic, rig.ledgers_of(secured.admin, topic)


def test_the_admin_source_reads_the_real_internal_stats_with_the_token(
    secured: SecuredPulsar, client_log: Path
) -> None:
    ns = _namespace(secured, "authed")
    topic, referenced = _written(secured, TopicName(ns, "orders"), client_log)
    config = {
        "in_use_ledgers_source": "ADMIN",
        "auth_plugin": TOKEN_PLUGIN,
        "deletion_namespaces": (str(ns),),
        "min_ledger_age_seconds_of_two_phase_deletion": 0,
        "max_reconsume_times_of_two_phase_deletion": 1,
    }
    sidecar = rig.sidecar(
        secured.cluster, client_log, auth_params=f"token:{secured.tokens['admin']}", **config
    )
    try:
        sidecar.phase_one.enqueue([pending(topic, ledger) for ledger in sorted(referenced)])
        recorder = rig.run_worker(
            sidecar, lambda r: all(Outcome.ARCHIVED in r.of(i) for i in referenced)
        )
    finally:
        sidecar.close()
    for result in recorder.results:
        assert result.outcome in (Outcome.RECONSUMED, Outcome.ARCHIVED), result
        assert "still referenced by" in result.reason, result.reason
    assert referenced <= rig.ledgers_of(secured.admin, topic)


def test_a_wrong_token_is_unknown_and_nothing_is_deleted(
    secured: SecuredPulsar, client_log: Path
) -> None:
    ns = _namespace(secured, "wrong")
    topic, referenced = _written(secured, TopicName(ns, "orders"), client_log)
    http = AdminHttp(secured.cluster.web_url, token=secured.tokens["stranger"])
    source = AdminApiInUseLedgers(http)
    try:
        with pytest.raises(MetadataError, match="authentication/authorization failed"):
            source.fetch(topic)
    finally:
        source.close()
    assert referenced <= rig.ledgers_of(secured.admin, topic)


def test_who_may_produce_to_the_deletion_topic(secured: SecuredPulsar, client_log: Path) -> None:
    """The broker lets a role with produce on the namespace (an application's usual grant)
    produce to `__ledger_deletion`, and the tenant's admin and superusers too; a stranger
    not. The sidecar names the granted role at start-up (the others it cannot see)."""
    ns = _namespace(secured, "shared")
    secured.admin.post(f"/admin/v2/namespaces/{ns}/permissions/app", ["produce", "consume"])
    sidecar = rig.sidecar(
        secured.cluster, client_log, auth_plugin=TOKEN_PLUGIN,
        auth_params=f"token:{secured.tokens['admin']}", deletion_namespaces=(str(ns),),
    )  # fmt: skip
    try:
        sidecar.phase_one.enqueue([pending(TopicName(ns, "t"), 1)])  # the topics exist
        risks = sidecar.policy_risks()
    finally:
        sidecar.close()
    (line,) = [r for r in risks[ns] if "may produce to" in r]
    assert line.startswith(f"roles app may produce to persistent://{ns}/{DELETION_TOPIC}")
    allowed = {}
    for role in ROLES:
        client = secured.client(role, client_log)
        try:
            producer = client.create_producer(ns.deletion_topic)
            producer.send(b"x")
            producer.close()
            allowed[role] = True
        except pulsar.PulsarException as exc:
            allowed[role] = False
            print(role, "refused:", exc)
        finally:
            client.close()
    print("may produce:", allowed)
    assert allowed == {"admin": True, "app": True, "tenant-admin": True, "stranger": False}
