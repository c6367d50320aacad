"""Namespace policies under which a broker could drop a pending deletion, read at start-up.

Paths and JSON are apache/pulsar's pulsar-broker/.../admin/v2/Namespaces.java
(`GET /{tenant}/{namespace}/retention`, `.../inactiveTopicPolicies`,
`.../subscriptionExpirationTime`) with the shapes of `RetentionPolicies`
(`retentionTimeInMinutes`, `retentionSizeInMB`) and `InactiveTopicPolicies`
(`inactiveTopicDeleteMode`, `maxInactiveDurationSeconds`, `deleteWhileInactive`). A policy
not set on the namespace (no content) falls back to broker.conf, whose defaults are
assumed: `brokerDeleteInactiveTopicsEnabled=true`, `delete_when_no_subscriptions`, no
retention, subscriptions that never expire.
"""

from __future__ import annotations

from typing import Any

from deletion.domain.topics import ARCHIVE_SUBSCRIPTION, NamespaceName
from producers.admin_rest import AdminRest

NO_SUBSCRIPTIONS = "delete_when_no_subscriptions"


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
