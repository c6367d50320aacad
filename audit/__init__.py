"""The orphan-ledger audit: find ledgers no Pulsar metadata references, on Spark.

Layout: `schema` (the DataFrame shapes), `attribution`, `transform` and `tally` (pure
DataFrame functions; `id_words` the referenced ids as 64-bit words), `scan` (the inputs: the
ledgers and references scanned live or read from files, a malformed input refused),
`enqueue` (phase one), `pipeline` (one audit run), `report` (what the operator reads: the
console's summary, the HTML page, the Prometheus text file), `offload` (tiered storage and
the missing-data report), `session`, `progress`, `units`, `errors`, and `run` (the `audit`
command's body). Only this package imports PySpark; `ledger_janitor.commands.audit` imports it
lazily, so registering the command costs nothing.
"""
