"""Who serves what in the cluster, and moving it: the admin REST calls of Pulsar 4.0 a test
makes (any broker answers; a redirect to the owner or the leader is followed).

- a topic's owner: `GET /lookup/v2/topic/persistent/{tenant}/{ns}/{topic}` (`brokerUrl`,
  `httpUrl`); looking a topic up also assigns its bundle when nobody owns it;
- its bundle: the same path plus `/bundle`;
- `unload` of a bundle: `PUT /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload`; with
  `destinationBroker` (a broker id, `host:webServicePort`) the request goes to the leader
  broker, whose modular load manager records the bundle's affinity and hands the bundle to
  that broker at its next assignment (`NamespacesBase.setNamespaceBundleAffinityAsync`,
  `ModularLoadManagerWrapper.getLeastLoaded` in pulsar-broker 4.0.8);
- `split` of a bundle: `PUT .../{bundle}/split?unload=...&splitAlgorithmName=...`.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any
from urllib.parse import quote

from deletion.domain.topics import SUBSCRIPTION, NamespaceName, TopicName
from harness.pulsar_admin import BrokerAdmin

UNLOAD_SECONDS = 180.0


class ClusterAdmin(BrokerAdmin):
    @staticmethod
    def lookup_path(topic: TopicName) -> str:
        ns = topic.namespace
        name = quote(topic.local_name, safe="")
        return f"/lookup/v2/topic/persistent/{ns.tenant}/{ns.namespace}/{name}"

    def owner(self, topic: TopicName) -> dict[str, Any]:
        """The broker serving `topic` (one partition, or a plain topic), as the lookup says:
        `brokerUrl` (pulsar://) and `httpUrl`. Assigns the bundle if nobody owns it."""
        found: dict[str, Any] = self.get(self.lookup_path(topic))
        return found

    def owner_url(self, topic: TopicName) -> str:
        """The owner's service URL, pulsar://host:port."""
        return str(self.owner(topic)["brokerUrl"])

    def bundle_of(self, topic: TopicName) -> str:
        """The bundle range holding `topic`, e.g. `0x40000000_0x80000000` (plain text)."""
        return self._ok(self.http.get(f"{self.lookup_path(topic)}/bundle")).text.strip()

    def deletion_bundle(self, namespace: NamespaceName) -> str:
        """The bundle holding the namespace's deletion topic as it was made: the topic itself
        when `enqueue` made it without an admin URL (no partitions), else its first partition."""
        deletion = TopicName.parse(namespace.deletion_topic)
        made = self.consumers(deletion, SUBSCRIPTION)
        return self.bundle_of(TopicName.parse(min(made)) if made else deletion)

    def bundles(self, namespace: NamespaceName) -> list[str]:
        """The namespace's bundle ranges, in order."""
        boundaries = self.get(f"/admin/v2/namespaces/{namespace}/bundles")["boundaries"]
        return [f"{low}_{high}" for low, high in pairwise(boundaries)]

    def unload(self, namespace: NamespaceName, bundle: str, destination: str | None = None) -> None:
        """Unload a bundle; with `destination` (a broker id), to that broker.

        Waited for up to UNLOAD_SECONDS: with the bucket delayed-delivery tracker, 4.0.8's
        `BucketDelayedDeliveryTracker.close` waits on the metadata store's thread for a bucket
        snapshot being created, whose creation needs that thread, until its 60 s time-out
        ("Failed wait to snapshot generate"; an unload took 60.1 s in a CI run)."""
        query = f"?destinationBroker={destination}" if destination else ""
        path = f"/admin/v2/namespaces/{namespace}/{bundle}/unload{query}"
        self._ok(self.http.put(path, timeout=UNLOAD_SECONDS))

    def split(
        self,
        namespace: NamespaceName,
        bundle: str,
        unload: bool = False,
        algorithm: str = "range_equally_divide",
    ) -> None:
        flag = "true" if unload else "false"
        query = f"?unload={flag}&splitAlgorithmName={algorithm}"
        path = f"/admin/v2/namespaces/{namespace}/{bundle}/split{query}"
        self._ok(self.http.put(path, timeout=UNLOAD_SECONDS))  # an unload too (see unload)

    def bundle_owners(self, cluster: str, namespace: NamespaceName) -> dict[str, str]:
        """Per owned bundle of `namespace`, the id of the broker owning it (each broker's
        `ownedNamespaces`); a bundle nobody owns yet is absent."""
        owners: dict[str, str] = {}
        for broker in self.active_brokers(cluster):
            owned = self.get(f"/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces")
            for name in owned:  # tenant/ns/bundle (a heartbeat namespace has more parts)
                owner_namespace, _, bundle = name.rpartition("/")
                if owner_namespace == str(namespace):
                    owners[bundle] = broker
        return owners

    def spread(self, cluster: str, namespace: NamespaceName, brokers: list[str]) -> None:
        """Bundle i of `namespace` moved to `brokers[i % len(brokers)]` if another broker owns
        it (the load manager may have put them all on one); a bundle nobody owns is left."""
        owners = self.bundle_owners(cluster, namespace)
        for index, bundle in enumerate(self.bundles(namespace)):
            wanted = brokers[index % len(brokers)]
            if owners.get(bundle, wanted) != wanted:
                self.unload(namespace, bundle, destination=wanted)

    def leader_broker(self) -> str:
        """The leader broker's id (it makes the bundle assignments)."""
        return str(self.get("/admin/v2/brokers/leaderBroker")["brokerId"])

    def active_brokers(self, cluster: str) -> list[str]:
        found: list[str] = self.get(f"/admin/v2/brokers/{cluster}")
        return found

    def consumers(self, topic: TopicName, subscription: str) -> dict[str, int]:
        """Per partition of a partitioned `topic`, or for the topic itself when it has no
        partitions, the consumers on `subscription` (none for one without it); empty when the
        topic does not exist."""
        path = f"{self.topic_path(topic)}/partitioned-stats?perPartition=true"
        stats = self.get(path, 404) or {}  # a 404's body says why: no partitions to read
        found = stats.get("partitions", {})
        if not stats.get("metadata", {}).get("partitions"):
            whole = self.get(f"{self.topic_path(topic)}/stats", 404) or {}
            found = {str(topic): whole} if "subscriptions" in whole else {}
        return {
            name: len(partition["subscriptions"].get(subscription, {}).get("consumers", []))
            for name, partition in found.items()
        }
