"""The durable cursor: its znode, its rotated ledger, the dispatch gate, settings and inspection."""
