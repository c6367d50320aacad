"""A real Pulsar cluster on one machine (issue 32): a ZooKeeper ensemble, bookies, brokers
and a ledger-janitor sidecar next to each broker, with the helpers scenario tests use to
fault it and to see who serves what. See cluster.py."""

from harness.pulsar_cluster.bookie import Bookie
from harness.pulsar_cluster.broker import Broker
from harness.pulsar_cluster.cluster import CLUSTER_NAME, PulsarCluster
from harness.pulsar_cluster.node import JvmNode, NodeFailedError
from harness.pulsar_cluster.sidecar import SidecarProcess
from harness.pulsar_cluster.topology import ClusterAdmin
from harness.pulsar_cluster.zookeeper import ZooKeeperNode

__all__ = [
    "CLUSTER_NAME",
    "Bookie",
    "Broker",
    "ClusterAdmin",
    "JvmNode",
    "NodeFailedError",
    "PulsarCluster",
    "SidecarProcess",
    "ZooKeeperNode",
]
