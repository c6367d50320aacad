"""Against real servers: ZooKeeper, pulsar-lite, loopback HTTP, moto, the CLI in processes."""
