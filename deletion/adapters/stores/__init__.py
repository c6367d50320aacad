"""MetadataStore adapters: ZooKeeper (kazoo) and embedded SQLite."""
