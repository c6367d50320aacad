"""How ack state goes into a cursor ledger and comes back.

The full-state (PIP-381) and incremental (PIP-81) layouts, and recovery from either."""
