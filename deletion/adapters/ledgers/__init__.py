"""LedgerStorage adapters: BookKeeper metadata over a MetadataStore, and embedded SQLite."""
