"""Cursor ack state, wire formats and persistence layouts over the embedded ledger store."""
