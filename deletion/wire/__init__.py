"""Pulsar's and BookKeeper's wire formats: generated protobufs, compression, ledger metadata,
offload indexes."""
