package org.apache.bookkeeper.mledger.deletion;

/** PIP-186: a BookKeeper ledger, or its offloaded copy. */
public enum LedgerType {
    LEDGER,
    OFFLOAD_LEDGER
}
