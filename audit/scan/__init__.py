"""The audit's inputs: the ledgers and the references, scanned live or read from files.

`ledgers` (the inventory: every ledger that exists), `references` (every ledger Pulsar's
metadata points at, on Spark) over `pulsar_refs` (one topic's references, plain Python),
`files` (JSON lines or Parquet in, the Parquet report out), `input_check` and `json_lines`
(a malformed input refused with the line that is wrong).
"""
