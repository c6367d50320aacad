package org.apache.bookkeeper.mledger.deletion;

/** PIP-186: which part of a topic owns the ledger. */
public enum LedgerComponent {
    MANAGED_LEDGER,
    MANAGED_CURSOR,
    SCHEMA_STORAGE
}
