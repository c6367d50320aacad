"""The audit on real Spark (local mode and a standalone cluster) and a real ZooKeeper."""
