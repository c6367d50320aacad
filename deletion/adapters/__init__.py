"""The ports' adapters side by side: metadata stores, ledger storages, in-use sources, offload."""
