"""A cursor's acknowledgment state in memory: positions, per-ledger bitmaps, the LRU of PIP-81."""
