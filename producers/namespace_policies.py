"""Namespace policies under which a broker could drop a pending deletion, or let others ask
for deletions, read at start-up.

Paths and JSON are apache/pulsar's pulsar-broker/.../admin/v2/Namespaces.java
(`GET /{tenant}/{namespace}/retention`, `.../inactiveTopicPolicies`,
`.../subscriptionExpirationTime`) with the shapes of `RetentionPolicies`
(`retentionTimeInMinutes`, `retentionSizeInMB`) and `InactiveTopicPolicies`
(`inactiveTopicDeleteMode`, `maxInactiveDurationSeconds`, `deleteWhileInactive`). A policy
not set on the namespace (no content) falls back to broker.conf, whose defaults are
assumed: `brokerDeleteInactiveTopicsEnabled=true`, `delete_when_no_subscriptions`, no
retention, subscriptions that never expire.

Who may produce to the deletion topic (`GET .../{namespace}/permissions`, a map of role to
actions, and the same of the partitioned topic): every role granted `produce` there, which a
namespace-wide grant to an application's role includes. Such a client can ask for any of the
namespace's ledgers to be deleted; the worker still deletes only what nothing references and
nothing can still record, of that namespace's own topics (its ledgers' metadata must say so),
but the request itself should come from the brokers and ledger-janitor only. Superusers and
the tenant's admins may produce too, and are not listed (the real 4.0 broker lets both:
tests/real_pulsar/test_auth.py).
"""

from __future__ import annotations

from typing import Any

from deletion.domain.topics import ARCHIVE_SUBSCRIPTION, DELETION_TOPIC, NamespaceName, TopicName
from producers.admin_rest import AdminRest

NO_SUBSCRIPTIONS = "delete_when_no_subscriptions"
PRODUCE = "produce"  # AuthAction


def policy_risks(admin: AdminRest, namespace: NamespaceName) -> list[str]:
    """What could lose a pending deletion in this namespace, each with the setting to change."""
    inactive = _dict(admin.namespace_policy(namespace, "inactiveTopicPolicies"))
    retention = _dict(admin.namespace_policy(namespace, "retention"))
    expiry = admin.namespace_policy(namespace, "subscriptionExpirationTime")
    risks = []
    deletes_inactive = inactive.get("deleteWhileInactive", True) is True
    mode = inactive.get("inactiveTopicDeleteMode", NO_SUBSCRIPTIONS)
    if isinstance(expiry, int) and not isinstance(expiry, bool) and expiry > 0:
        risks.append(
            f"idle subscriptions expire after {expiry} min (subscriptionExpirationTime), and "
            "an expired archive or worker subscription leaves its topic's messages unkept: "
            f"set it to 0 (pulsar-admin namespaces set-subscription-expiration-time {namespace}"
            " -t 0)"
        )
        if deletes_inactive and mode == NO_SUBSCRIPTIONS:
            risks.append(
                "the broker then deletes the topic without subscriptions "
                "(inactiveTopicPolicies deleteWhileInactive=true, delete_when_no_subscriptions):"
                f" pulsar-admin namespaces set-inactive-topic-policies {namespace} "
                "--disable-delete-while-inactive"
            )
    producers = _producer_roles(admin, namespace)
    if producers:
        risks.append(
            f"roles {', '.join(producers)} may produce to {namespace.deletion_topic}, so a"
            " client with one of them can ask for this namespace's unreferenced ledgers to be"
            " deleted; grant produce there to the brokers' and ledger-janitor's roles only"
            f" (pulsar-admin namespaces revoke-permission {namespace} --role ROLE, then grant"
            " the application's topics one by one)"
        )
    minutes = retention.get("retentionTimeInMinutes", 0)
    if not isinstance(minutes, int) or minutes == 0:
        risks.append(
            f"no retention: the archive keeps messages only through its {ARCHIVE_SUBSCRIPTION} "
            f"subscription; set one (pulsar-admin namespaces set-retention {namespace} "
            "--time -1 --size 1G, or defaultRetentionTimeInMinutes in broker.conf)"
        )
    return risks


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _producer_roles(admin: AdminRest, namespace: NamespaceName) -> list[str]:
    """Roles granted produce on the namespace or on its deletion topic."""
    granted = _dict(admin.namespace_policy(namespace, "permissions"))
    topic = TopicName(namespace, DELETION_TOPIC)
    granted_here = _dict(admin.topic_policy(topic, "permissions"))
    roles = set()
    for grants in (granted, granted_here):
        roles |= {role for role, actions in grants.items() if PRODUCE in (actions or [])}
    return sorted(roles)
