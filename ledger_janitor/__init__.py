"""ledger-janitor: two-phase deletion of Apache Pulsar ledgers."""

__version__ = "0.1.0"
